"""Compiles every `.py` member of the built archives, without writing bytecode.

argv: pairs of (candidate folder, archive path). For each archive, every ZIP
member whose name ends in `.py` is read (at most MAX_BYTES) and compiled with
`compile(source, "<folder>/<member>", "exec", dont_inherit=True)`: the bytes are
passed as they are, so the source's own encoding cookie counts, as on import.
Nothing is executed or imported, and no bytecode is written.

Prints one JSON document:
{"files": {folder: N}, "errors": [{"candidate", "path", "line", "error"}],
 "unreadable": [{"candidate", "archive", "error"}]}
"""

import json
import sys
import zipfile

MAX_BYTES = 16 * 1024 * 1024


def main(argv):
    files = {}
    errors = []
    unreadable = []
    for folder, archive in zip(argv[0::2], argv[1::2]):
        files.setdefault(folder, 0)
        try:
            with zipfile.ZipFile(archive) as zf:
                for info in zf.infolist():
                    if info.is_dir() or not info.filename.endswith(".py"):
                        continue
                    files[folder] += 1
                    if info.file_size > MAX_BYTES:
                        errors.append({"candidate": folder, "path": info.filename, "line": None,
                                       "error": "larger than %d bytes; not compiled" % MAX_BYTES})
                        continue
                    with zf.open(info) as member:
                        source = member.read(MAX_BYTES + 1)
                    try:
                        compile(source, "%s/%s" % (folder, info.filename), "exec", dont_inherit=True)
                    except SyntaxError as e:
                        errors.append({"candidate": folder, "path": info.filename, "line": e.lineno,
                                       "error": "%s: %s" % (type(e).__name__, e.msg)})
                    except (ValueError, UnicodeDecodeError, MemoryError, RecursionError) as e:
                        errors.append({"candidate": folder, "path": info.filename, "line": None,
                                       "error": "%s: %s" % (type(e).__name__, e)})
        except (OSError, zipfile.BadZipFile, RuntimeError, ValueError) as e:
            unreadable.append({"candidate": folder, "archive": archive, "error": "%s: %s" % (type(e).__name__, e)})
    json.dump({"files": files, "errors": errors, "unreadable": unreadable}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
