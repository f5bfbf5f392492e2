"""Audit journal throughput, side by side with the bare loops it is built on.

    python benchmarks/bench_audit.py [--records 1000000] [--appends 2000] [--dir DIR]

Reports (1) verification speed of a journal vs a bare SHA-256 chain loop over the same bytes,
with the verifier's peak memory, and (2) durable (fsync) appends vs a bare write+fsync loop on
the same disk. Ratios are ours/bare for rates (higher is better).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from safeport.shared.audit import JournalWriter, verify_journal
from safeport.shared.audit.record import GENESIS, format_record


def build_journal(path: Path, count: int) -> int:
    head = GENESIS
    with path.open("wb") as out:
        batch = []
        for index in range(count):
            line, head = format_record(
                head,
                "2026-11-30T10:00:00.000000Z",
                "read",
                {
                    "body": {
                        "tool": "read_file",
                        "path": f"src/module_{index % 977}.py",
                        "bytes": index % 65536,
                        "origin": "bench",
                        "denied": False,
                    }
                },
            )
            batch.append(line)
            if len(batch) == 10000:
                out.write(b"".join(batch))
                batch.clear()
        out.write(b"".join(batch))
    os.chmod(path, 0o600)
    return path.stat().st_size


def bare_chain_loop(path: Path) -> float:
    """Read the same bytes in the same chunks and SHA-256 every line, chaining nothing else."""
    start = time.perf_counter()
    sha256 = hashlib.sha256
    carry = b""
    prev = b""
    with path.open("rb", buffering=0) as stream:
        while chunk := stream.read(4 * 1024 * 1024):
            lines = (carry + chunk).split(b"\n")
            carry = lines.pop()
            for line in lines:
                prev = sha256(line).hexdigest().encode()
    assert prev
    return time.perf_counter() - start


def verify_in_child(path: Path) -> tuple[float, int, int]:
    code = (
        "import resource,sys,time,json;from pathlib import Path;"
        "from safeport.shared.audit import verify_journal;"
        "t=time.perf_counter();r=verify_journal(Path(sys.argv[1]));d=time.perf_counter()-t;"
        "print(json.dumps([d,r.records,resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,0]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
    ).stdout
    seconds, records, peak_kib, base_kib = json.loads(out)
    return seconds, records, peak_kib - base_kib


def durable_appends(folder: Path, count: int, rounds: int = 10) -> tuple[float, float, int]:
    """Alternate rounds of ours and bare so disk noise hits both alike; sum the times."""
    os.sync()  # let earlier writeback settle so it does not land on one contender
    path = folder / "actions.jsonl"
    body = {
        "action": "ssh_exec",
        "host_id": "build-staging",
        "command_id": "status",
        "args_digest": "0" * 64,
        "decision": "allowed",
    }
    writer = JournalWriter(path, durability="fsync")
    writer.append("warmup", body)
    line_size = len(path.read_bytes().splitlines()[-1]) + 1
    fd = os.open(folder / "bare.bin", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    data = b"x" * (line_size - 1) + b"\n"
    per_round = max(1, count // rounds)
    ours = bare = 0.0
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(per_round):
            writer.append("action.intent", body)
        ours += time.perf_counter() - start
        start = time.perf_counter()
        for _ in range(per_round):
            os.write(fd, data)
            os.fsync(fd)
        bare += time.perf_counter() - start
    writer.close()
    os.close(fd)
    return ours, bare, line_size


def filesystem_of(folder: Path) -> str:
    best, fstype = "", "unknown"
    with open("/proc/mounts") as mounts:
        for line in mounts:
            parts = line.split()
            if str(folder.resolve()).startswith(parts[1]) and len(parts[1]) > len(best):
                best, fstype = parts[1], parts[2]
    return fstype


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--appends", type=int, default=2000)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="sp-bench-", dir=args.dir))
    journal = folder / "reads.jsonl"
    size = build_journal(journal, args.records)
    verify_journal(journal)  # warm the page cache for both contenders
    seconds, records, peak_kib = verify_in_child(journal)
    bare = min(bare_chain_loop(journal) for _ in range(3))
    seconds = min(seconds, *(verify_in_child(journal)[0] for _ in range(2)))
    print(f"verify: {records:,} records, {size / 1e6:.0f} MB")
    print(f"  safeport verify      {records / seconds:>12,.0f} records/s ({seconds:.2f} s)")
    print(f"  bare sha256 loop     {records / bare:>12,.0f} records/s ({bare:.2f} s)")
    print(f"  ratio (ours/bare)    {bare / seconds:>12.2f}")
    print(f"  verifier peak RSS: {peak_kib / 1024:.1f} MiB")
    ours, bare_fs, line_size = durable_appends(folder, args.appends)
    print(f"durable appends: {args.appends} x {line_size} bytes on {filesystem_of(folder)}")
    print(f"  safeport fsync mode  {args.appends / ours:>12,.0f} appends/s")
    print(f"  bare write+fsync     {args.appends / bare_fs:>12,.0f} appends/s")
    print(f"  ratio (ours/bare)    {bare_fs / ours:>12.2f}")
    for item in folder.iterdir():
        item.unlink()
    folder.rmdir()


if __name__ == "__main__":
    main()
