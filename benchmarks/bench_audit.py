"""Audit journal throughput, side by side with the bare loops it is built on.

    python benchmarks/bench_audit.py [--records 1000000] [--appends 2000] [--threads 8] [--dir DIR]
    python benchmarks/bench_audit.py --quick --json     # the short profile CI runs
    python benchmarks/bench_audit.py --stamping [--requests 600] [--checkpoint-interval 1]

Reports (1) verification speed of a journal vs a bare SHA-256 chain loop over the same bytes,
with the verifier's peak memory, (2) durable (fsync) appends vs a bare write+fsync loop in the
same folder, one thread each, taking turns every 10 appends with a twin bare loop (whose
ratio to the first is the run's noise), and (3) the same with ``--threads``
threads appending at once (group commit) beside the bare loop. Ratios are ours/bare for rates
(higher is better). The load average is printed before and after.

``--stamping`` measures instead what RFC 3161 time stamps of checkpoints cost an action: two
real gateway processes side by side (the test harness's, journal bodies sealed), one without
``[audit.timestamp]`` and one stamping every checkpoint at a real TSA on loopback (OpenSSL's
`openssl ts -reply`, the tests' harness), both signing a checkpoint every
``--checkpoint-interval`` seconds (the default policy signs every 300 s: this is far more
often). Proposal round trips over agent.sock alternate between the two in chunks, so the
machine's changing pace hits both alike; the ratio is stamping on / off (lower is better).
``--twin`` runs the same with stamping off in both: its ratio is the run's noise.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

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


BODY = {
    "action": "ssh_exec",
    "host_id": "build-staging",
    "command_id": "status",
    "args_digest": "0" * 64,
    "decision": "allowed",
}


def durable_appends(folder: Path, count: int, per_round: int = 10) -> dict[str, Any]:
    """Seconds per append: ours, and two identical bare loops, taking turns every ``per_round``
    appends, so the disk's changing pace hits all three alike. The two bare loops' ratio is
    the run's noise: how far apart two identical contenders land."""
    os.sync()  # let earlier writeback settle so it does not land on one contender
    path = folder / "actions.jsonl"
    writer = JournalWriter(path, durability="fsync")
    writer.append("warmup", BODY)
    line_size = len(path.read_bytes().splitlines()[-1]) + 1
    bare_fds = [
        os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        for name in ("bare.bin", "bare-twin.bin")
    ]
    data = b"x" * (line_size - 1) + b"\n"
    rounds = max(1, count // per_round)
    ours = 0.0
    bare = [0.0, 0.0]
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(per_round):
            writer.append("action.intent", BODY)
        ours += time.perf_counter() - start
        for index, fd in enumerate(bare_fds):
            start = time.perf_counter()
            for _ in range(per_round):
                os.write(fd, data)
                os.fsync(fd)
            bare[index] += time.perf_counter() - start
    writer.close()
    for fd in bare_fds:
        os.close(fd)
    appends = rounds * per_round
    return {
        "appends": appends,
        "line_bytes": line_size,
        "ours_s": ours / appends,
        "bare_s": bare[0] / appends,
        "twin_s": bare[1] / appends,
    }


def concurrent_appends(folder: Path, threads: int, each: int) -> float:
    """Appends per second with ``threads`` threads on one fsync-mode writer (group commit)."""
    with JournalWriter(folder / "concurrent.jsonl", durability="fsync") as writer:
        writer.append("warmup", BODY)
        start_line = threading.Barrier(threads + 1)

        def work() -> None:
            start_line.wait()
            for _ in range(each):
                writer.append("action.intent", BODY)

        workers = [threading.Thread(target=work) for _ in range(threads)]
        for worker in workers:
            worker.start()
        start_line.wait()
        started = time.perf_counter()
        for worker in workers:
            worker.join()
        return threads * each / (time.perf_counter() - started)


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
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--quick", action="store_true", help="a short profile (for CI)")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of text")
    parser.add_argument("--stamping", action="store_true", help="time stamps' cost to an action")
    parser.add_argument("--requests", type=int, default=600, help="proposals per gateway")
    parser.add_argument("--checkpoint-interval", type=float, default=1.0)
    parser.add_argument(
        "--twin", action="store_true", help="--stamping with neither stamping: the run's noise"
    )
    args = parser.parse_args()
    if args.quick:
        args.records, args.appends, args.requests = 20_000, 300, 100
    if args.stamping:
        figures = stamping_cost(args)
        print(json.dumps(figures, sort_keys=True, indent=None if args.json else 2))
        return
    figures = measure(args)
    if args.json:
        print(json.dumps(figures, sort_keys=True))
    else:
        render(figures)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    folder = Path(tempfile.mkdtemp(prefix="sp-bench-", dir=args.dir))
    try:
        journal = folder / "reads.jsonl"
        size = build_journal(journal, args.records)
        verify_journal(journal)  # warm the page cache for both contenders
        seconds, records, peak_kib = verify_in_child(journal)
        bare = min(bare_chain_loop(journal) for _ in range(3))
        seconds = min(seconds, *(verify_in_child(journal)[0] for _ in range(2)))
        appends = durable_appends(folder, args.appends)
        ours_s, bare_s = appends["ours_s"], appends["bare_s"]
        each = max(1, args.appends // args.threads)
        grouped = concurrent_appends(folder, args.threads, each)
        filesystem = filesystem_of(folder)
    finally:
        for item in folder.iterdir():
            item.unlink()
        folder.rmdir()
    return {
        "verify": {
            "records": records,
            "megabytes": round(size / 1e6, 1),
            "ours_per_s": records / seconds,
            "bare_per_s": records / bare,
            "ratio": bare / seconds,
            "peak_rss_mib": peak_kib / 1024,
        },
        "append": {
            "appends": appends["appends"],
            "line_bytes": appends["line_bytes"],
            "filesystem": filesystem,
            "ours_per_s": 1 / ours_s,
            "bare_per_s": 1 / bare_s,
            "ratio": bare_s / ours_s,
            "ours_us": ours_s * 1e6,
            "bare_us": bare_s * 1e6,
            "noise_ratio": bare_s / appends["twin_s"],
        },
        "group_commit": {
            "threads": args.threads,
            "ours_per_s": grouped,
            "ratio_to_bare_loop": grouped * bare_s,
        },
        "load_average": {
            "before": load_before,
            "after": Path("/proc/loadavg").read_text().split()[:3],
        },
    }


def render(figures: dict[str, Any]) -> None:
    verify, append, grouped = figures["verify"], figures["append"], figures["group_commit"]
    print(f"verify: {verify['records']:,} records, {verify['megabytes']:.0f} MB")
    print(f"  safeport verify      {verify['ours_per_s']:>12,.0f} records/s")
    print(f"  bare sha256 loop     {verify['bare_per_s']:>12,.0f} records/s")
    print(f"  ratio (ours/bare)    {verify['ratio']:>12.2f}")
    print(f"  verifier peak RSS: {verify['peak_rss_mib']:.1f} MiB")
    print(
        f"durable appends: {append['appends']} x {append['line_bytes']} bytes on "
        f"{append['filesystem']}, taking turns every 10"
    )
    print(
        f"  safeport fsync mode  {append['ours_per_s']:>12,.0f} appends/s "
        f"({append['ours_us']:.0f} µs each)"
    )
    print(
        f"  bare write+fsync     {append['bare_per_s']:>12,.0f} appends/s "
        f"({append['bare_us']:.0f} µs each)"
    )
    print(f"  ratio (ours/bare)    {append['ratio']:>12.2f}")
    print(f"  noise (bare/twin)    {append['noise_ratio']:>12.2f}  (two identical bare loops)")
    print(
        f"  {grouped['threads']} threads at once    {grouped['ours_per_s']:>12,.0f} appends/s "
        f"(group commit; {grouped['ratio_to_bare_loop']:.2f}x the bare loop)"
    )
    load = figures["load_average"]
    print(f"load average before {' '.join(load['before'])}, after {' '.join(load['after'])}")


def stamping_cost(args: argparse.Namespace) -> dict[str, Any]:
    """Proposal round trips with and without time stamps of checkpoints, side by side."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from benchmarks import bench_gateway as bg  # its client processes and figures
    from harness.gateway import POLICY, Gateway
    from harness.real_tsa import running_tsa

    load_before = Path("/proc/loadavg").read_text().split()[:3]
    base = Path(tempfile.mkdtemp(prefix="spbench-stamps-"))
    gateways: dict[str, Gateway] = {}
    clients: dict[str, Any] = {}
    samples: dict[str, list[float]] = {"off": [], "on": []}
    cpu = {"off": 0.0, "on": 0.0}
    try:
        with running_tsa() as tsa:
            stamping = (
                f'\n[[audit.timestamp.tsa]]\nurl = "{tsa.url()}"\n'
                f'ca_file = "{tsa.honest.ca_file}"\n'
            )
            for mode in ("off", "on"):
                home = base / mode
                home.mkdir(mode=0o700, parents=True)
                gw = gateways[mode] = Gateway(home)
                gw.record_path = Path(os.devnull)
                stamped = mode == "on" and not args.twin
                gw.write_policy(POLICY + (stamping if stamped else ""))
                gw.start("--seal", "--checkpoint-interval", str(args.checkpoint_interval))
                gw.unlock()
                gw.accept_policy()
                [clients[mode]] = bg.start_clients(gw, 1)
                bg.run_clients([clients[mode]], 10)  # one-off digests and caches
            chunk = max(1, min(10, args.requests // 6))  # short turns: both see the same load
            turn = 0
            while len(samples["on"]) < args.requests:
                order = ("off", "on") if turn % 2 == 0 else ("on", "off")
                for mode in order:
                    pid = gateways[mode].proc.pid  # type: ignore[union-attr]
                    before = bg.cpu_seconds(pid)
                    [result] = bg.run_clients([clients[mode]], chunk)
                    cpu[mode] += bg.cpu_seconds(pid) - before  # the stamper thread's included
                    samples[mode] += result["samples"]
                turn += 1
            stamps_file = gateways["on"].home / "audit" / "checkpoint.stamps"
            stamps = len(stamps_file.read_bytes().splitlines()) if stamps_file.exists() else 0
            tsa_requests = sum(tsa.requests.values())
    finally:
        for mode, gw in gateways.items():
            if mode in clients:
                bg.stop_clients([clients[mode]])
            gw.stop()
        shutil.rmtree(base, ignore_errors=True)
    figures: dict[str, Any] = {
        mode: {
            "proposals": len(values),
            "p50_ms": bg.pct(values, 0.5),
            "p99_ms": bg.pct(values, 0.99),
            "mean_ms": statistics.fmean(values) * 1000,
            # Follows the code more than the machine's load does: what that gateway spent.
            "gateway_cpu_ms_per_proposal": cpu[mode] / len(values) * 1000,
        }
        for mode, values in samples.items()
    }
    figures["ratio_p50"] = figures["on"]["p50_ms"] / figures["off"]["p50_ms"]
    figures["ratio_mean"] = figures["on"]["mean_ms"] / figures["off"]["mean_ms"]
    figures["ratio_cpu"] = (
        figures["on"]["gateway_cpu_ms_per_proposal"] / figures["off"]["gateway_cpu_ms_per_proposal"]
    )
    figures["stamps_stored"] = stamps
    figures["tsa_requests"] = tsa_requests
    figures["checkpoint_interval_s"] = args.checkpoint_interval
    figures["twin"] = args.twin
    figures["load_average"] = {
        "before": load_before,
        "after": Path("/proc/loadavg").read_text().split()[:3],
    }
    return figures


if __name__ == "__main__":
    main()
