#!/usr/bin/env python3
"""Which uniform registers a kernel's LDGSTS (cp.async) instructions read that no instruction of
the kernel writes (issue #19, bench/results/2026-12-06-grid/ call 3): ptxas 13.0 compiled the
tinygemm's evict-first cp.async copies into LDGSTS reading UR0/UR1, never written, with the
policy from createpolicy or as a constant alike (an illegal instruction on the GPU).

    python3 bench/sass_policy.py K.cubin [...]      (needs nvdisasm or cuobjdump on PATH or in
                                                     $CUDA_HOME/bin; nvdisasm 13.2 from PyPI reads
                                                     ptxas 13.0's sm_90a cubins)
"""
import os
import re
import shutil
import subprocess
import sys


def sass(cubin: str) -> str:
    for tool, args in (("nvdisasm", ["-c"]), ("cuobjdump", ["-sass"])):
        path = shutil.which(tool) or os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", tool)
        if os.path.exists(path):
            return subprocess.run([path, *args, cubin], capture_output=True, text=True, check=True).stdout
    raise SystemExit("neither nvdisasm nor cuobjdump found")


def main() -> int:
    bad = 0
    for cubin in sys.argv[1:]:
        lines = sass(cubin).splitlines()
        read = {r for l in lines if "LDGSTS" in l for r in re.findall(r"\bUR\d+\b", l)}
        written = set()
        for l in lines:
            m = re.search(r"\*/\s+(?:@!?U?P\w+\s+)?(U[A-Z0-9._]+|R2UR[A-Z0-9._]*|S2UR)\s+(UR\d+)\b", l)
            if m:
                written.add(m.group(2))
                if m.group(1).endswith(".64"):       # a 64-bit write fills the pair
                    written.add(f"UR{int(m.group(2)[2:]) + 1}")
        unwritten = sorted(read - written)
        bad += bool(unwritten)
        print(f"{cubin}: {sum('LDGSTS' in l for l in lines)} LDGSTS; uniform registers read "
              f"{sorted(read)}; never written: {unwritten or 'none'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
