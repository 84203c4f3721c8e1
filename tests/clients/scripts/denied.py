try:
    await tools.read(path="/etc/passwd")
    r = "read it"
except ToolError as e:
    # "[code] tools.NAME: message"
    head, message = str(e).split(": ", 1)
    code, tool = head[1:].split("] tools.")
    r = {"name": "ToolError", "code": code, "tool": tool, "message": message}
r
