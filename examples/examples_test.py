#!/usr/bin/env python3
"""The nightly examples are well formed: each YAML file parses with the keys
its scheduler needs, the Slurm scripts hold the array and the dependent merge
step, the shard counts agree within each example, every example runs the
image of the repository's Dockerfile, and every sdpacheck command and option
they use is one the README's Commands section lists.
Usage: examples_test.py REPOSITORY_ROOT"""
import pathlib
import re
import sys

import yaml

ROOT = pathlib.Path(sys.argv[1])
EX = ROOT / "examples"
failures = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else ": " + detail))
    if not ok:
        failures.append(name)


def strings(node):
    """Every string in a parsed YAML document."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from strings(k)
            yield from strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from strings(v)


def sdpacheck_commands(text):
    """(subcommand, [--options]) of each `sdpacheck SUB ...` in shell text."""
    text = text.replace("\\\n", " ")
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    out = []
    for m in re.finditer(r"\bsdpacheck (fuzz|merge|replay|explain|repro|gate|list)\b([^\n;&|]*)", text):
        out.append((m.group(1), re.findall(r"(?<![\w-])--[a-z][a-z-]*", m.group(2))))
    return out


readme = (ROOT / "README.md").read_text()
synopsis = readme[readme.index("## Commands"):]
synopsis = synopsis[: synopsis.index("```", synopsis.index("```") + 3)]


def check_commands(name, texts):
    cmds = [c for t in texts for c in sdpacheck_commands(t)]
    check(name + ": runs sdpacheck fuzz and merge", {"fuzz", "merge"} <= {c for c, _ in cmds}, str(cmds))
    for sub, options in cmds:
        check(f"{name}: sdpacheck {sub} is in the README", f"sdpacheck {sub}" in synopsis)
        for o in options:
            check(f"{name}: sdpacheck {sub} {o} is in the README", re.search(re.escape(o) + r"\b", synopsis) is not None)


dockerfile = (ROOT / "Dockerfile").read_text()
check("Dockerfile: debian:12", re.search(r"^FROM debian:12\s*$", dockerfile, re.M) is not None)
check("Dockerfile: the install script", "./scripts/install-deps.sh" in dockerfile)
check("Dockerfile: the README's Release build",
      "cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release" in dockerfile and "cmake --build build" in dockerfile)

# Kubernetes: an Indexed Job of N shards, then a merge Job.
shards = yaml.safe_load((EX / "kubernetes/shards-job.yaml").read_text())
merge = yaml.safe_load((EX / "kubernetes/merge-job.yaml").read_text())
for name, doc in [("k8s shards", shards), ("k8s merge", merge)]:
    check(name + ": apiVersion batch/v1, kind Job", doc.get("apiVersion") == "batch/v1" and doc.get("kind") == "Job")
    pod = doc.get("spec", {}).get("template", {}).get("spec", {})
    check(name + ": a container and restartPolicy Never",
          bool(pod.get("containers")) and pod.get("restartPolicy") == "Never")
spec = shards["spec"]
check("k8s shards: completionMode Indexed", spec.get("completionMode") == "Indexed")
n = spec.get("completions")
check("k8s shards: completions and parallelism", isinstance(n, int) and n > 1 and 1 <= spec.get("parallelism", 0) <= n)
fuzz_text = " ".join(strings(shards))
check("k8s shards: --shards equals completions", f"--shards {n} " in fuzz_text, fuzz_text)
check("k8s: both run the same image", shards["spec"]["template"]["spec"]["containers"][0]["image"] ==
      merge["spec"]["template"]["spec"]["containers"][0]["image"])
check_commands("k8s", list(strings(shards)) + list(strings(merge)))

# GitHub Actions: a schedule, a shard matrix, a merge job that needs it.
gha = yaml.safe_load((EX / "github-actions/nightly.yml").read_text())
on = gha.get("on", gha.get(True))  # YAML 1.1 reads the key `on` as true
check("gha: on.schedule with a cron", isinstance(on, dict) and bool(on.get("schedule")) and
      "cron" in on["schedule"][0])
jobs = gha.get("jobs", {})
matrix_jobs = [k for k, j in jobs.items() if "matrix" in j.get("strategy", {})]
check("gha: a job with strategy.matrix", len(matrix_jobs) == 1, str(list(jobs)))
if matrix_jobs:
    fuzz = jobs[matrix_jobs[0]]
    values = fuzz["strategy"]["matrix"].get("shard", [])
    text = " ".join(strings(fuzz))
    check("gha: the matrix is every shard", values == list(range(len(values))) and len(values) > 1, str(values))
    check("gha: --shard takes the matrix's index of its count",
          "--shard ${{ matrix.shard }}/%d " % len(values) in text, text)
    merges = [k for k, j in jobs.items() if "sdpacheck merge" in " ".join(strings(j))]
    check("gha: a merge job that needs the shards", len(merges) == 1 and
          matrix_jobs[0] in ([jobs[merges[0]]["needs"]] if isinstance(jobs[merges[0]].get("needs"), str)
                             else jobs[merges[0]].get("needs", [])))
check("gha: builds the image from the Dockerfile", "docker build" in " ".join(strings(gha)))
check_commands("gha", list(strings(gha)))

# Slurm: an array of shards, and the merge submitted to run after it.
sbatch = (EX / "slurm/shards.sbatch").read_text()
submit = (EX / "slurm/submit-nightly.sh").read_text()
merge_sbatch = (EX / "slurm/merge.sbatch").read_text()
m = re.search(r"^#SBATCH --array=(\d+)-(\d+)\s*$", sbatch, re.M)
check("slurm: #SBATCH --array=0-(N-1)", m is not None and int(m.group(1)) == 0 and int(m.group(2)) >= 1)
check("slurm: the merge depends on the array",
      re.search(r"array=\$\(sbatch --parsable shards\.sbatch\)", submit) is not None and
      re.search(r"sbatch --dependency=after(ok|any):\"?\$array\"? merge\.sbatch", submit) is not None, submit)
check("slurm: the shard comes from the array's variables, not --shard", "--shard" not in sbatch)
check("slurm: the image of the Dockerfile", "docker build -t sdpacheck ." in sbatch and "sdpacheck.sif" in merge_sbatch)
check_commands("slurm", [sbatch, merge_sbatch])

if failures:
    print(f"{len(failures)} failures")
    sys.exit(1)
print("all examples well formed")
