"""A scripted stand-in for an external coding agent (tests/external.rs): reads the task Cake
wrote, deepens the best schedule's pipeline by one stage, also writes a schedule that does not
parse, and reports its token usage."""
import json
import os
import re

task = json.load(open(os.environ["CAKE_TASK"]))
best = open(task["best"]["file"]).read()
stages = int(re.search(r"^STAGES = (\d+)", best, re.M).group(1))
out = task["candidates_dir"]
with open(os.path.join(out, "deeper.py"), "w") as f:
    f.write(re.sub(r"^STAGES = \d+", f"STAGES = {stages + 1}", best, flags=re.M))
with open(os.path.join(out, "broken.py"), "w") as f:
    f.write("import cake\ndef (:\n")
with open("usage.json", "w") as f:
    json.dump({"tokens": 1000}, f)
print("agent: wrote 2 candidates for generation", task["generation"])
