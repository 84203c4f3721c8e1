#!/usr/bin/env python3
"""Packs already-built toolhost binaries into the packages users run it from.

Usage:
    pack.py BINARY [BINARY ...] --out DIR [--version V] [--strip none|debug|all]
            [--mcpb CLI] [--readme FILE]

For each BINARY (a Linux ELF executable, glibc-linked, x86_64 or aarch64),
into DIR:

    toolhost-V-py3-none-PLATFORM.whl   a wheel laid out as maturin's
                                       `bindings = "bin"` lays it out, so
                                       `uvx toolhost`, `pipx run toolhost` and
                                       `pip install toolhost` all run the binary
    toolhost-linux-ARCH-gnu-V.tgz      the npm package of that platform
                                       (`@toolhost/linux-ARCH-gnu`)
    toolhost-V-linux-ARCH-gnu.mcpb     an MCP bundle, packed and validated by
                                       the official @anthropic-ai/mcpb CLI

and once: toolhost-V.tgz, the npm package `toolhost` (a Node launcher that
runs the binary of the platform package npm installed: the esbuild pattern,
no install script, nothing downloaded), and SHA256SUMS over everything
written.

Why not maturin: the same single binary goes into every package (wheel, npm,
bundle), built once by cargo; and the tests build the packages from the test
build's binary, which maturin would not take without building a second,
release binary. The wheel format is small and specified (PEP 427, PEP 491), so
it is written here with the standard library.

A second target (aarch64) is one more BINARY on the command line: each gets
its wheel, platform package and bundle, and the main npm package lists every
platform package as an optional dependency.

The version comes from the workspace Cargo.toml ([workspace.package]
version) unless --version is given. Standard library only (Python 3.9+).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

NAME = "toolhost"
SUMMARY = "A sandbox host for LLM-agent tools: WebAssembly components served over MCP"
LICENSE = "Apache-2.0"
# The wheel runs no Python; this only bounds the interpreters installers
# will create an environment with for it.
REQUIRES_PYTHON = ">=3.8"
NPM_SCOPE = "@toolhost"
KEYWORDS = ["mcp", "model-context-protocol", "sandbox", "webassembly", "wasm", "agent", "tools"]

# Zip entries get a fixed time, so the same binary gives the same packages.
ZIP_TIME = (1980, 1, 1, 0, 0, 0)

# ELF e_machine values and what each platform calls the CPU.
EM_X86_64 = 62
EM_AARCH64 = 183
MACHINES = {
    EM_X86_64: {"wheel": "x86_64", "node": "x64"},
    EM_AARCH64: {"wheel": "aarch64", "node": "arm64"},
}

# What a manylinux wheel may link dynamically: the libraries every glibc
# system has (PEP 600 defers to auditwheel's policy; this is its core list).
MANYLINUX_LIBS = {
    "libc.so.6",
    "libm.so.6",
    "libdl.so.2",
    "librt.so.1",
    "libpthread.so.0",
    "libutil.so.1",
    "libresolv.so.2",
    "libnsl.so.1",
    "libgcc_s.so.1",
    "libstdc++.so.6",
    "ld-linux-x86-64.so.2",
    "ld-linux-aarch64.so.1",
}

# The legacy manylinux names pip before 20.3 knows, by the glibc they stand for.
LEGACY_MANYLINUX = {(2, 17): "manylinux2014", (2, 12): "manylinux2010", (2, 5): "manylinux1"}


class PackError(Exception):
    """A reason the packages cannot be written, said plainly."""


# --- ELF -----------------------------------------------------------------------------------------


@dataclass
class Elf:
    machine: int
    needed: list[str]
    # The highest GLIBC_x.y symbol version the binary asks for.
    glibc: tuple[int, int]
    has_debug_info: bool


SHT_STRTAB = 3
SHT_DYNAMIC = 6
SHT_GNU_VERNEED = 0x6FFFFFFE
DT_NULL = 0
DT_NEEDED = 1


def read_elf(path: Path) -> Elf:
    """Reads what the platform tag depends on from a 64-bit little-endian ELF executable: its
    machine, the libraries it links (DT_NEEDED) and the glibc symbol versions it needs
    (.gnu.version_r), the same facts `objdump -T` and `readelf -d` show."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF":
        raise PackError(f"{path} is not an ELF executable (toolhost packages are for Linux)")
    if data[4] != 2 or data[5] != 1:
        raise PackError(f"{path} is not a 64-bit little-endian ELF file")
    (e_machine,) = struct.unpack_from("<H", data, 18)
    (e_shoff,) = struct.unpack_from("<Q", data, 40)
    e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHH", data, 58)
    if e_shoff == 0 or e_shnum == 0:
        raise PackError(f"{path} has no section headers (cannot read the glibc versions it needs)")

    sections = []
    for i in range(e_shnum):
        off = e_shoff + i * e_shentsize
        name, sh_type, _flags, _addr, sh_offset, sh_size, sh_link = struct.unpack_from("<IIQQQQI", data, off)
        sections.append((name, sh_type, sh_offset, sh_size, sh_link))

    def string(table: int, offset: int) -> str:
        start = sections[table][2] + offset
        end = data.index(b"\0", start)
        return data[start:end].decode("utf-8", "replace")

    names = [string(e_shstrndx, s[0]) for s in sections]
    has_debug_info = any(n.startswith(".debug_") or n.startswith(".zdebug_") for n in names)

    needed: list[str] = []
    versions: list[tuple[int, int]] = []
    for _name, sh_type, sh_offset, sh_size, sh_link in sections:
        if sh_type == SHT_DYNAMIC:
            for off in range(sh_offset, sh_offset + sh_size, 16):
                tag, val = struct.unpack_from("<qQ", data, off)
                if tag == DT_NULL:
                    break
                if tag == DT_NEEDED:
                    needed.append(string(sh_link, val))
        elif sh_type == SHT_GNU_VERNEED:
            # Verneed entries, each with a chain of Vernaux entries naming a version.
            off = sh_offset
            while True:
                _vn_version, vn_cnt, _vn_file, vn_aux, vn_next = struct.unpack_from("<HHIII", data, off)
                aux = off + vn_aux
                for _ in range(vn_cnt):
                    _hash, _flags, _other, vna_name, vna_next = struct.unpack_from("<IHHII", data, aux)
                    m = re.fullmatch(r"GLIBC_(\d+)\.(\d+)(?:\.\d+)?", string(sh_link, vna_name))
                    if m:
                        versions.append((int(m.group(1)), int(m.group(2))))
                    if vna_next == 0:
                        break
                    aux += vna_next
                if vn_next == 0:
                    break
                off += vn_next
    if not versions:
        raise PackError(
            f"{path} needs no GLIBC symbol versions: not a dynamically linked glibc binary, "
            "for which no manylinux tag can be computed"
        )
    return Elf(machine=e_machine, needed=needed, glibc=max(versions), has_debug_info=has_debug_info)


@dataclass
class Platform:
    """One binary's platform, in each ecosystem's words."""

    wheel_tags: list[str]  # e.g. ["manylinux_2_34_x86_64"]
    node_cpu: str  # "x64"
    key: str  # "linux-x64-gnu": the npm package's and the bundle's suffix
    glibc: tuple[int, int]

    @property
    def wheel_platform(self) -> str:
        return ".".join(self.wheel_tags)

    @property
    def npm_package(self) -> str:
        return f"{NPM_SCOPE}/{self.key}"


def platform_of(elf: Elf, path: Path) -> Platform:
    arch = MACHINES.get(elf.machine)
    if arch is None:
        raise PackError(f"{path}: ELF machine {elf.machine} is neither x86_64 ({EM_X86_64}) nor aarch64 ({EM_AARCH64})")
    foreign = [lib for lib in elf.needed if lib not in MANYLINUX_LIBS]
    if foreign:
        raise PackError(
            f"{path} links {', '.join(foreign)}, which a manylinux system need not have; "
            "link it statically or leave it out"
        )
    major, minor = elf.glibc
    tags = [f"manylinux_{major}_{minor}_{arch['wheel']}"]
    legacy = LEGACY_MANYLINUX.get(elf.glibc)
    if legacy and not (legacy == "manylinux1" and arch["wheel"] == "aarch64"):
        tags.append(f"{legacy}_{arch['wheel']}")
    return Platform(wheel_tags=tags, node_cpu=arch["node"], key=f"linux-{arch['node']}-gnu", glibc=elf.glibc)


# --- helpers -------------------------------------------------------------------------------------


def workspace_version() -> str:
    text = (ROOT / "Cargo.toml").read_text(encoding="utf-8")
    try:
        import tomllib  # Python 3.11+
    except ModuleNotFoundError:
        section = re.search(r"^\[workspace\.package\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
        m = section and re.search(r'^version\s*=\s*"([^"]+)"', section.group(1), re.M)
        if not m:
            raise PackError(f"no [workspace.package] version in {ROOT / 'Cargo.toml'}") from None
        return m.group(1)
    version = tomllib.loads(text).get("workspace", {}).get("package", {}).get("version")
    if not isinstance(version, str):
        raise PackError(f"no [workspace.package] version in {ROOT / 'Cargo.toml'}")
    return version


def run(cmd: list[str], what: str, cwd: Path | None = None) -> str:
    """Runs `cmd`; its stdout, or a PackError with its output."""
    try:
        out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise PackError(f"{what}: {cmd[0]} is not installed") from None
    if out.returncode != 0:
        raise PackError(f"{what} failed ({' '.join(cmd)}, exit {out.returncode}):\n{out.stdout}{out.stderr}")
    return out.stdout


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def stage_binary(binary: Path, dest: Path, strip: str) -> None:
    """Copies the binary to `dest`, without its debug info (`debug`) or also its symbol table
    (`all`); `debug` keeps function names in panic backtraces."""
    if strip == "none":
        shutil.copy2(binary, dest)
    else:
        flag = "--strip-debug" if strip == "debug" else "--strip-all"
        run(["strip", flag, "-o", str(dest), str(binary)], f"stripping {binary}")
    dest.chmod(0o755)


# --- wheel ---------------------------------------------------------------------------------------


def wheel(binary: Path, platform: Platform, version: str, readme: str, out: Path) -> Path:
    """A wheel holding only the binary as a script (`toolhost-V.data/scripts/toolhost`): installers
    put it on the environment's PATH with its executable bit (kept in the zip's external
    attributes)."""
    dist = f"{NAME}-{version}"
    path = out / f"{dist}-py3-none-{platform.wheel_platform}.whl"
    metadata = "".join(
        [
            "Metadata-Version: 2.1\n",
            f"Name: {NAME}\n",
            f"Version: {version}\n",
            f"Summary: {SUMMARY}\n",
            f"Keywords: {','.join(KEYWORDS)}\n",
            f"License: {LICENSE}\n",
            "Classifier: License :: OSI Approved :: Apache Software License\n",
            "Classifier: Operating System :: POSIX :: Linux\n",
            "Classifier: Programming Language :: Rust\n",
            "Classifier: Environment :: Console\n",
            f"Requires-Python: {REQUIRES_PYTHON}\n",
            "Description-Content-Type: text/markdown; charset=UTF-8; variant=GFM\n",
            "\n",
            readme,
        ]
    )
    wheel_file = "".join(
        ["Wheel-Version: 1.0\n", "Generator: toolhost deploy/dist/pack.py\n", "Root-Is-Purelib: false\n"]
        + [f"Tag: py3-none-{tag}\n" for tag in platform.wheel_tags]
    )
    record: list[str] = []

    def digest(data_hash: bytes) -> str:
        return "sha256=" + base64.urlsafe_b64encode(data_hash).rstrip(b"=").decode()

    def info(name: str, mode: int) -> zipfile.ZipInfo:
        zi = zipfile.ZipInfo(name, ZIP_TIME)
        zi.create_system = 3  # Unix: the external attributes carry the mode
        zi.external_attr = (0o100000 | mode) << 16
        zi.compress_type = zipfile.ZIP_DEFLATED
        return zi

    tmp = path.with_suffix(".whl.part")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as z:
        name = f"{dist}.data/scripts/{NAME}"
        h = hashlib.sha256()
        size = 0
        with binary.open("rb") as src, z.open(info(name, 0o755), "w") as dst:
            for chunk in iter(lambda: src.read(1 << 20), b""):
                h.update(chunk)
                size += len(chunk)
                dst.write(chunk)
        record.append(f"{name},{digest(h.digest())},{size}")
        # dist-info last, as the wheel spec recommends.
        for rel, text in [("METADATA", metadata), ("WHEEL", wheel_file)]:
            data = text.encode("utf-8")
            name = f"{dist}.dist-info/{rel}"
            z.writestr(info(name, 0o644), data)
            record.append(f"{name},{digest(hashlib.sha256(data).digest())},{len(data)}")
        name = f"{dist}.dist-info/RECORD"
        record.append(f"{name},,")
        z.writestr(info(name, 0o644), "\n".join(record) + "\n")
    tmp.replace(path)
    return path


# --- npm -----------------------------------------------------------------------------------------


def npm_pack(directory: Path, out: Path) -> Path:
    """`npm pack` of a package directory into `out`; the tarball's path."""
    stdout = run(
        ["npm", "pack", "--json", "--ignore-scripts", "--pack-destination", str(out), str(directory)],
        f"npm pack of {directory.name}",
    )
    try:
        filename = json.loads(stdout)[0]["filename"]
    except (ValueError, LookupError, TypeError):
        raise PackError(f"npm pack printed no tarball name: {stdout[:500]}") from None
    return out / filename


def npm_platform_package(binary: Path, platform: Platform, version: str, stage: Path, out: Path) -> Path:
    d = stage / f"npm-{platform.key}"
    (d / "bin").mkdir(parents=True)
    shutil.copy2(binary, d / "bin" / NAME)
    major, minor = platform.glibc
    manifest = {
        "name": platform.npm_package,
        "version": version,
        "description": f"The toolhost binary for Linux {platform.node_cpu} (glibc {major}.{minor} or later); "
        "installed by the `toolhost` package",
        "license": LICENSE,
        "os": ["linux"],
        "cpu": [platform.node_cpu],
        "libc": ["glibc"],
        "preferUnplugged": True,
        "files": [f"bin/{NAME}"],
    }
    (d / "package.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    (d / "README.md").write_text(
        f"# {platform.npm_package}\n\nThe `toolhost` binary for Linux {platform.node_cpu} with glibc "
        f"{major}.{minor} or later. Install `toolhost` instead: `npx -y toolhost serve`.\n",
        encoding="utf-8",
    )
    return npm_pack(d, out)


def npm_main_package(platforms: list[Platform], version: str, readme: str, stage: Path, out: Path) -> Path:
    d = stage / "npm-main"
    (d / "bin").mkdir(parents=True)
    shutil.copy2(HERE / "npm" / "toolhost.js", d / "bin" / "toolhost.js")
    (d / "bin" / "toolhost.js").chmod(0o755)
    manifest = {
        "name": NAME,
        "version": version,
        "description": SUMMARY,
        "license": LICENSE,
        "keywords": KEYWORDS,
        "bin": {NAME: "bin/toolhost.js"},
        "files": ["bin/toolhost.js"],
        "engines": {"node": ">=18"},
        "optionalDependencies": {p.npm_package: version for p in platforms},
    }
    (d / "package.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    (d / "README.md").write_text(readme, encoding="utf-8")
    return npm_pack(d, out)


# --- MCP bundle ----------------------------------------------------------------------------------


def bundle_manifest(platform: Platform, version: str) -> dict:
    return {
        "manifest_version": "0.3",
        "name": NAME,
        "display_name": "toolhost",
        "version": version,
        "description": "Sandboxed tools for agents: read, list, grep, write, edit and fetch, each call "
        "checked against a policy and run in a WebAssembly sandbox",
        "author": {"name": "The toolhost authors"},
        "license": LICENSE,
        "keywords": KEYWORDS,
        "server": {
            "type": "binary",
            "entry_point": f"server/{NAME}",
            "mcp_config": {
                "command": "${__dirname}/server/" + NAME,
                "args": ["serve", "--dir", "${user_config.workspace}"],
            },
        },
        # The tools come from the workspace's toolhost.toml, or are the built-ins.
        "tools_generated": True,
        "compatibility": {"platforms": ["linux"]},
        "user_config": {
            "workspace": {
                "type": "directory",
                "title": "Workspace",
                "description": "The directory the tools may touch (they see it as /workspace): "
                "read, list and grep run; write and edit ask first",
                "required": True,
            }
        },
    }


def mcp_bundle(binary: Path, platform: Platform, version: str, mcpb: Path, stage: Path, out: Path) -> Path:
    d = stage / f"mcpb-{platform.key}"
    (d / "server").mkdir(parents=True)
    shutil.copy2(binary, d / "server" / NAME)
    manifest = d / "manifest.json"
    manifest.write_text(json.dumps(bundle_manifest(platform, version), indent=2) + "\n", encoding="utf-8")
    run(["node", str(mcpb), "validate", str(manifest)], "mcpb validate")
    path = out / f"{NAME}-{version}-{platform.key}.mcpb"
    run(["node", str(mcpb), "pack", str(d), str(path)], "mcpb pack")
    if not path.is_file():
        raise PackError(f"mcpb pack wrote no {path}")
    return path


# --- main ----------------------------------------------------------------------------------------


def default_mcpb() -> Path:
    """The packer deploy/dist/install.sh installs (and installs it when missing)."""
    out = run(["bash", str(HERE / "install.sh")], "installing @anthropic-ai/mcpb (deploy/dist/install.sh)")
    return Path(out.strip().splitlines()[-1])


def pack(binaries: list[Path], out: Path, version: str, strip: str, mcpb: Path, readme: str) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    platforms: list[Platform] = []
    with tempfile.TemporaryDirectory(prefix="toolhost-pack-") as tmp:
        stage = Path(tmp)
        for i, binary in enumerate(binaries):
            staged = stage / f"{i}-{NAME}"
            stage_binary(binary, staged, strip)
            platform = platform_of(read_elf(staged), binary)
            if any(p.key == platform.key for p in platforms):
                raise PackError(f"two binaries for {platform.key}")
            platforms.append(platform)
            written.append(wheel(staged, platform, version, readme, out))
            written.append(npm_platform_package(staged, platform, version, stage, out))
            written.append(mcp_bundle(staged, platform, version, mcpb, stage, out))
        written.append(npm_main_package(platforms, version, readme, stage, out))
    sums = out / "SHA256SUMS"
    sums.write_text("".join(f"{sha256_file(p)}  {p.name}\n" for p in sorted(written)), encoding="utf-8")
    return written + [sums]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("binaries", nargs="+", type=Path, metavar="BINARY", help="built toolhost binaries")
    p.add_argument("--out", type=Path, required=True, help="where the packages are written")
    p.add_argument("--version", help="the packages' version (default: the workspace Cargo.toml's)")
    p.add_argument(
        "--strip",
        choices=["none", "debug", "all"],
        default="debug",
        help="what `strip` removes from the packaged copy: nothing, debug info (default), or also symbols",
    )
    p.add_argument("--mcpb", type=Path, help="the @anthropic-ai/mcpb CLI (default: installed by install.sh)")
    p.add_argument("--readme", type=Path, default=ROOT / "README.md", help="the long description")
    args = p.parse_args(argv)
    try:
        for b in args.binaries:
            if not b.is_file():
                raise PackError(f"{b}: no such file (build it first: cargo build --release -p toolhost)")
        version = args.version or workspace_version()
        # Plain releases only: a Cargo pre-release (0.2.0-rc.1) is spelled differently in a wheel.
        if not re.fullmatch(r"\d+\.\d+\.\d+", version):
            raise PackError(f"version {version!r} is not MAJOR.MINOR.PATCH")
        readme = args.readme.read_text(encoding="utf-8")
        mcpb = args.mcpb or default_mcpb()
        written = pack(args.binaries, args.out, version, args.strip, mcpb, readme)
    except (PackError, OSError) as e:
        print(f"pack.py: error: {e}", file=sys.stderr)
        return 1
    for path in written:
        print(f"{path.stat().st_size:>12}  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
