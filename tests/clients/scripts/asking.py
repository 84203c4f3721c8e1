await tools.read(path="notes.txt")
try:
    await tools.edit(path="notes.txt", old_text="omega line", new_text="omega line, edited by a script")
    edit = "done"
except ToolError as e:
    edit = str(e)[1:].split("]")[0]
await tools.write(path="from-script.txt", content="written by a script\n")
{"edit": edit}
