"""The Shard corpus (test/Corpus/shard/*.mlir): programs of the kinds
upstream MLIR's own Shard, Linalg, Tensor and Arith partitioning tests
exercise, written here, one module per "// -----" chunk (as upstream's
--split-input-file tests). Each chunk goes through what a user does:

  partition  stock mlir-opt: shard-partition (as upstream's partition
             tests, whose annotations are complete), else
             sharding-propagation then shard-partition
             (skipped for a chunk marked "// corpus: partitioned", written
             in the partitioned form because upstream's partitioner crashes
             on its annotated form)
  host       overlap-compile --target=host --emit=obj
  cuda       overlap-compile --target=cuda --emit=obj (when the CUDA
             backend is built)
  run        overlap-run on the grid's ranks: overlap against the unsplit
             build, bit-identical ("ok") or why not

and gets one outcome per stage: "ok", or the first error line (the reason
it is declined), or "-" (not reached). expected.json beside the corpus
records the outcomes; test_shard_corpus.py fails when a stage that was ok
is not. `python python/tests/shard_corpus.py [--update]` prints the table
(and rewrites expected.json), with the counts docs/forms.md gives.

`python python/tests/shard_corpus.py --files F.mlir...` runs the same
stages on test files from elsewhere (upstream's own
mlir/test/Dialect/Shard/*.mlir, say, which are not in this project): each
function becomes its own module, with the chunk's grids, the private
declarations and the functions it calls, as a user who tries one of them
would write it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Tuple

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "test" / "Corpus" / "shard"
EXPECTED = CORPUS / "expected.json"
STAGES = ("partition", "host", "cuda", "run")


def tools() -> Dict[str, str]:
    build = Path(os.environ.get("OVERLAP_BUILD_DIR", ROOT / "build"))
    found = {name: str(build / "bin" / name)
             for name in ("overlap-compile", "overlap-run")}
    opt = os.environ.get("MLIR_OPT") or shutil.which("mlir-opt") or \
        "/usr/lib/llvm-22/bin/mlir-opt"
    found["mlir-opt"] = opt
    for name, path in found.items():
        if not os.access(path, os.X_OK):
            raise FileNotFoundError(f"{name} not found at {path}")
    found["cuda"] = str(any((build / d / "liboverlap_runtime_cuda.so")
                            .is_file() for d in ("lib", "bin")))
    return found


def cases() -> List[Tuple[str, str, bool]]:
    """(name "file:function", module text, already partitioned)."""
    out = []
    for path in sorted(CORPUS.glob("*.mlir")):
        for chunk in path.read_text().split("// -----"):
            m = re.search(r"func\.func @(\w+)", chunk)
            if not m:
                continue
            out.append((f"{path.stem}:{m.group(1)}", chunk,
                        "// corpus: partitioned" in chunk))
    return out


def _functions(chunk: str) -> Dict[str, str]:
    """The chunk's functions with bodies, by name (each a whole text,
    comments dropped)."""
    text = "\n".join(l.split("//")[0] for l in chunk.splitlines())
    found = {}
    for m in re.finditer(r"func\.func\s+(?:(?:public|private|nested)\s+)?"
                         r"@([\w$.]+)\s*\(", text):
        i, depth = m.end(), 1
        while i < len(text) and depth:  # the argument list
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        while i < len(text):  # results and attributes, then the body
            c = text[i]
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            elif c == "{" and depth == 0:
                if not text[:i].rstrip().endswith("attributes"):
                    break
                braces = 0  # the function's attribute dictionary
                while i < len(text):
                    braces += {"{": 1, "}": -1}.get(text[i], 0)
                    if braces == 0:
                        break
                    i += 1
            elif c == "\n" and depth == 0 and re.match(
                    r"\s*(func\.func|shard\.grid|\}|module|#|$)",
                    text[i + 1:]):
                i = len(text)  # a declaration
            i += 1
        if i >= len(text):
            continue
        depth, j = 0, i
        while j < len(text):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            if depth == 0:
                break
            j += 1
        found[m.group(1)] = text[m.start():j + 1]
    return found


def split_functions(path: Path) -> List[Tuple[str, str, bool]]:
    """One module per function of `path` (its "// -----" chunks): the
    chunk's grids and private declarations, the function and those it
    calls."""
    out = []
    for chunk in path.read_text().split("// -----"):
        header = [l.strip() for l in chunk.splitlines()
                  if re.match(r"\s*(shard\.grid|#\w+ = )", l) or
                  re.match(r"\s*func\.func\s+private\b[^{]*$", l)]
        funcs = _functions(chunk)
        for name, text in funcs.items():
            need, todo = [name], [name]
            while todo:
                for callee in re.findall(r"call @([\w$.]+)",
                                         funcs[todo.pop()]):
                    if callee in funcs and callee not in need:
                        need.append(callee)
                        todo.append(callee)
            body = "\n".join(header + [funcs[n] for n in need])
            out.append((f"{path.parent.name}/{path.stem}:{name}",
                        body + "\n", False))
    return out


def _first_error(text: str) -> str:
    for line in text.splitlines():
        if "error:" in line:
            line = line[line.index("error:") + 6:].strip()
            return re.sub(r"\s+", " ", line)[:200]
    lines = [l for l in text.splitlines() if l.strip()]
    return (lines[-1] if lines else "failed")[:200]


def run_case(name: str, text: str, partitioned: bool, t: Dict[str, str],
             work: Path) -> Dict[str, str]:
    out = {s: "-" for s in STAGES}
    stem = name.replace(":", "_").replace("/", "_")
    src = work / f"{stem}.mlir"
    src.write_text(text)
    part = work / f"{stem}.part.mlir"

    def call(args):
        return subprocess.run(args, capture_output=True, text=True,
                              timeout=300)

    if partitioned:
        shutil.copy(src, part)
        out["partition"] = "ok (written partitioned)"
    else:
        # As upstream's partition tests (complete annotations), else with
        # sharding-propagation first (annotations on some values only).
        for passes in ("shard-partition",
                       "sharding-propagation,shard-partition"):
            r = call([t["mlir-opt"], str(src), "--pass-pipeline=builtin."
                      f"module(func.func({passes}))", "-o", str(part)])
            if r.returncode == 0:
                break
        if r.returncode:
            out["partition"] = ("upstream mlir-opt crashed" if
                                r.returncode < 0 else _first_error(r.stderr))
            return out
        out["partition"] = "ok"
    for target in ("host", "cuda"):
        if target == "cuda" and t["cuda"] != "True":
            out["cuda"] = "- (no CUDA backend built)"
            continue
        r = call([t["overlap-compile"], str(part), f"--target={target}",
                  "--emit=obj", "-o", str(work / f"{stem}.{target}.o")])
        out[target] = "ok" if r.returncode == 0 else _first_error(r.stderr)
    if out["host"] != "ok":
        return out
    # overlap-run runs the entry's grid (its size, or a dynamic extent 2).
    r = call([t["overlap-run"], str(part)])
    tail = r.stdout.strip().splitlines()[-1:] if r.stdout.strip() else []
    if r.returncode == 0 and tail == ["OK"] and \
            "bit-identical: yes" in r.stdout:
        out["run"] = "ok"
    else:
        said = [l for l in r.stdout.splitlines()
                if l.startswith("bit-identical:")]
        out["run"] = (_first_error(r.stderr) if r.returncode == 2
                      else "MISMATCH: " + (said[0] if said
                                           else _first_error(r.stdout)))
    return out


def run_all(chosen=None) -> Dict[str, Dict[str, str]]:
    t = tools()
    results = {}
    with tempfile.TemporaryDirectory(prefix="overlap-corpus-") as d:
        for name, text, partitioned in (chosen or cases()):
            results[name] = run_case(name, text, partitioned, t, Path(d))
    return results


def counts(results: Dict[str, Dict[str, str]]) -> str:
    n = len(results)
    ok = {s: sum(r[s].startswith("ok") for r in results.values())
          for s in STAGES}
    return (f"{n} cases: partitioned {ok['partition']}, compile for host "
            f"{ok['host']}, for cuda {ok['cuda']}, run bit-identical "
            f"{ok['run']}")


def main(argv):
    if "--files" in argv:
        files = [Path(a) for a in argv[argv.index("--files") + 1:]]
        chosen = [c for f in files for c in split_functions(f)]
        results = run_all(chosen)
        for name, r in results.items():
            print(f"{name:55s} " + " | ".join(f"{s}: {r[s]}"
                                              for s in STAGES))
        for f in files:
            mine = {k: v for k, v in results.items()
                    if k.split(":")[0] == f"{f.parent.name}/{f.stem}"}
            print(f"{f}: {counts(mine)}")
        print("all: " + counts(results))
        return
    results = run_all()
    for name, r in results.items():
        print(f"{name:55s} " + " | ".join(f"{s}: {r[s]}" for s in STAGES))
    print(counts(results))
    if "--update" in argv:
        EXPECTED.write_text(json.dumps(results, indent=1, sort_keys=True) +
                            "\n")
        print(f"wrote {EXPECTED}")


if __name__ == "__main__":
    main(sys.argv[1:])
