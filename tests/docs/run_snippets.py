"""Run one page's steps (a JSON list) in the working directory: python blocks share one namespace, in order."""

from __future__ import annotations

import json
import subprocess
import sys
import traceback
from pathlib import Path


def main(steps_file: str) -> int:
    namespace: dict[str, object] = {"__name__": "__main__"}
    for step in json.loads(Path(steps_file).read_text(encoding="utf-8")):
        print(f"--- {step['origin']} ({step['kind']})", flush=True)
        if step["kind"] == "file":
            target = Path(step["path"])
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(step["code"], encoding="utf-8")
        elif step["kind"] == "shell":
            print(f"$ {step['code']}", flush=True)
            if subprocess.run(["bash", "-c", step["code"]], check=False).returncode != 0:
                print(f"FAILED: {step['origin']}: `{step['code']}` exited non-zero", flush=True)
                return 1
        else:
            try:
                exec(compile(step["code"], step["origin"], "exec"), namespace)
            except BaseException:
                traceback.print_exc()
                print(f"FAILED: {step['origin']}: the python block raised", flush=True)
                return 1
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
