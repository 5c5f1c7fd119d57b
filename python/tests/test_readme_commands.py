"""The README's promise (issue 52): after `./scripts/demo.sh` alone, the
README's next commands run. Checked here by reading both files: every tool
a README command names under build/bin is one demo.sh builds, and a README
command that runs Python over the package (examples/jax) has the C API
libraries it loads (libOverlapCAPI.so, libOverlapHostCAPI.so) built by
demo.sh too."""

import re
import shlex

from conftest import ROOT


def _demo_targets():
    text = (ROOT / "scripts" / "demo.sh").read_text()
    match = re.search(r'"\$ROOT/scripts/build.sh"((?:[^\n]*\\\n)*[^\n]*)',
                      text)
    assert match, "demo.sh no longer calls scripts/build.sh with targets"
    return set(shlex.split(match.group(1).replace("\\\n", " ")))


def _readme_commands():
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    lines = " ".join(blocks).replace("\\\n", " ")
    return lines


def test_demo_builds_every_tool_the_readme_runs():
    targets = _demo_targets()
    tools = set(re.findall(r"build/bin/([\w-]+)", _readme_commands()))
    assert tools, "the README names no build/bin tool any more"
    assert tools <= targets, (
        f"README commands use {sorted(tools - targets)}, which "
        "scripts/demo.sh does not build")


def test_demo_builds_the_c_api_the_readme_python_commands_load():
    commands = _readme_commands()
    if "build/venv/bin/python" not in commands:
        return
    assert {"OverlapCAPI", "OverlapHostCAPI"} <= _demo_targets(), (
        "the README runs Python over the package, which loads "
        "libOverlapCAPI.so and libOverlapHostCAPI.so; demo.sh must build "
        "them")
