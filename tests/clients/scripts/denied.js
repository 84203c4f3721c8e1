try {
  await tools.read({path: "/etc/passwd"});
  return "read it";
} catch (e) {
  return {name: e.name, code: e.code, tool: e.tool, message: e.message};
}
