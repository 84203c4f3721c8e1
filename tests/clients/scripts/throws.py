await tools.write(path="thrown-1.txt", content="one\n")
await tools.write(path="thrown-2.txt", content="two\n")
raise RuntimeError("after two writes")
