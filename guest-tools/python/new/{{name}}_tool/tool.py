"""The {{name}} tool's declaration: name, schemas, annotations, paths."""

import toolhost_kit as kit

from .counting import count


def execute(args):
    # The host checked args against INPUT_SCHEMA. Resolve every path
    # argument: inside a component Python's working directory is "/", where
    # nothing is granted; the kit resolves against the host's (/workspace),
    # as the host's path checks did.
    path = kit.resolve_path(args["path"])
    try:
        with open(path, "rb") as f:
            lines, size = count(f)
    except OSError as err:
        # not_found, is_directory, permission_denied, ...: stable codes.
        raise kit.ToolError.from_os_error(err, args["path"]) from None
    return {"path": args["path"], "lines": lines, "bytes": size}


def render(args, value):
    # What the model reads. Pure: it runs in a fresh instance, from the value.
    return [kit.Text(f"{value['lines']} lines, {value['bytes']} bytes in {value['path']}")]


# The schemas the host checks calls and values against: change them here.
INPUT_SCHEMA = kit.object_schema(  # additionalProperties: false
    {"path": {"type": "string", "minLength": 1,
              "description": "The file, relative to the working directory or absolute."}},
    required=["path"],
)
OUTPUT_SCHEMA = kit.object_schema(
    {
        "path": {"type": "string", "description": "The file, as given."},
        "lines": {"type": "integer", "minimum": 0,
                  "description": "Newline characters, plus a last line without one."},
        "bytes": {"type": "integer", "minimum": 0, "description": "Size in bytes."},
    },
    required=["path", "lines", "bytes"],
)

COUNT = kit.Tool(
    name="{{name}}",
    description="Counts the lines and bytes of a file.",
    input_schema=INPUT_SCHEMA,
    output_schema=OUTPUT_SCHEMA,
    execute=execute,
    render=render,
    # It changes nothing, and the same file gives the same answer.
    annotations=kit.Annotations(read_only=True, idempotent=True),
    # The host checks this argument against the policy's grants first.
    paths=[kit.PathParam("/path", "read")],
)

TOOLSET = kit.Toolset([COUNT])
