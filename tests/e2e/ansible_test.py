#!/usr/bin/python3
"""The fleet runner (contrib/ansible/klf-digest.yml, issue 20 item 5) against localhost with three
"brokers" as local log dirs: a copy of Kafka's aborted-to-committed replica set and a seeded random
timeline. The playbook runs klf digest on each host, fetches the digests, runs klf triage on them; its
report must equal klf triage over the directories (the fields tests/e2e/digest_test.py compares).
Skipped, saying so, only when ansible-playbook is not installed (scripts/install-deps.sh test installs it)."""
import json
import os
import shutil
import subprocess

from klf_e2e import KLF, ORACLE, SRC, check, process, run_tests, temp_dir, copy_fixture
from digest_test import comparable

PLAYBOOK = os.path.join(SRC, "contrib", "ansible", "klf-digest.yml")


def run_fleet(source, work):
    brokers = []
    for b in ("broker1", "broker2", "broker3"):
        brokers.append(copy_fixture(os.path.join(source, b), os.path.join(work, "fleet", b)))
    inv = os.path.join(work, "inventory.ini")
    with open(inv, "w") as f:
        f.write("[brokers]\n")
        for b, d in zip(("broker1", "broker2", "broker3"), brokers):
            f.write(f"{b} ansible_connection=local klf_log_dirs='[\"{d}\"]'\n")
        f.write(f"\n[brokers:vars]\nklf_work_dir={work}/host-work\nklf_io_rate=100000000\n")
        f.write("\n[all:vars]\nansible_python_interpreter=/usr/bin/python3\n")
    central = os.path.join(work, "central")
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_HOST_KEY_CHECKING="False",
               ANSIBLE_LOCAL_TEMP=os.path.join(work, "ansible-tmp"), ANSIBLE_REMOTE_TEMP=os.path.join(work, "ansible-tmp"))
    p = subprocess.run(["ansible-playbook", "-i", inv, PLAYBOOK, "-e", f"klf_binary={KLF}",
                        "-e", f"klf_central_binary={KLF}", "-e", f"klf_central_dir={central}"],
                       capture_output=True, text=True, env=env, timeout=600)
    check(p.returncode == 0, f"ansible-playbook exit {p.returncode}: {p.stdout[-3000:]} {p.stderr[-2000:]}")
    if p.returncode != 0:
        return
    for b in ("broker1", "broker2", "broker3"):
        check(os.path.isfile(os.path.join(central, b + ".kdg")), f"{b}: digest not fetched")
    with open(os.path.join(central, "triage.json")) as f:
        fleet = json.load(f)
    q = process(["triage", "--json", *brokers])
    dirs = json.loads(q.stdout)
    check(comparable(fleet) == comparable(dirs),
          f"{source}: fleet triage differs from triage over the directories:\n{json.dumps(comparable(fleet))[:2000]}\n"
          f"{json.dumps(comparable(dirs))[:2000]}")
    check(len(fleet.get("digests", [])) == 3, f"fleet report names its digests: {fleet.get('digests')}")
    return fleet


def test_playbook_on_three_local_brokers():
    if shutil.which("ansible-playbook") is None:
        print("SKIP test_playbook_on_three_local_brokers: ansible-playbook is not installed "
              "(scripts/install-deps.sh test installs Debian's ansible)")
        return
    for source in (os.path.join(ORACLE, "replicas", "aborted-to-committed"),
                   os.path.join(ORACLE, "random-replicas", "timeline-04")):
        with temp_dir() as work:
            fleet = run_fleet(source, work)
            if fleet and source.endswith("aborted-to-committed"):
                check(fleet["counts"]["diverged"] == 1, f"the lost ABORT is found: {fleet['counts']}")


run_tests(globals())
