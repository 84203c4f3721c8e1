hits = await tools.grep(pattern="line|fox", path=".")
files = sorted(set(m["path"] for m in hits["matches"]))
notes = await tools.read(path="notes.txt")
print("matching files:", len(files))
{"files": files, "lines": notes["totalLines"], "last": notes["lines"][-1]}
