await tools.read({path: "notes.txt"});
let edit;
try {
  await tools.edit({path: "notes.txt", old_text: "omega line", new_text: "omega line, edited by a script"});
  edit = "done";
} catch (e) { edit = e.code; }
await tools.write({path: "from-script.txt", content: "written by a script\n"});
return {edit};
