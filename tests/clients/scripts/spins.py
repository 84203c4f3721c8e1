await tools.write(path="spun.txt", content="x\n")
while True:
    pass
