"""The README's two set-up commands are the ones CI runs, so the README stays true."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_readme_commands():
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"## Set-up: two commands.*?```bash\n(.*?)```", readme, re.DOTALL).group(1)
    commands = [line for line in block.splitlines() if line and not line.startswith("#")]
    assert len(commands) == 2
    install, main_job = commands[0].split(" && ")
    ci = (ROOT / ".ci" / "run").read_text()
    for command in (install, main_job, commands[1]):
        assert command.replace("pip install", "python -m pip install --quiet") in ci or command in ci, command
