#!/usr/bin/env python3
"""Finds the functions of a binary that a native run executes, for generate.sh.

A native run takes paths a run under callgrind never does (a lock found taken, a task still
running when its handle is dropped). Sampling them misses the rare ones, and page faults only
name the first function of each 64 KB block the kernel maps in. So this counts them exactly,
with one uprobe per function entry, in two steps:

  candidates BINARY PID EXCLUDE   the functions not named in the file EXCLUDE whose code lies
                                  on a page of BINARY that the running process PID has mapped:
                                  only those can have run in it
  add BINARY CANDIDATES           a uprobe at the entry of each function listed in CANDIDATES
  collect BINARY                  the probed functions that ran, the most called first, with
                                  their calls; then every probe is removed
  remove                          removes the probes (after an interrupted run)

Needs root and a writable tracefs at /sys/kernel/tracing. The kernel's cost of adding or
removing a probe grows with the probes there are, so only candidates are probed.
"""
import os
import struct
import subprocess
import sys

TRACING = "/sys/kernel/tracing"
GROUP = "muster_native"
PAGE = 4096


def functions(binary):
    """Code functions of `binary` by address: (size, [names])."""
    out = subprocess.run(["nm", "--defined-only", "--print-size", binary],
                         capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW" and int(parts[1], 16) > 0:
            size, names = found.get(int(parts[0], 16), (0, []))
            found[int(parts[0], 16)] = (max(size, int(parts[1], 16)), names + [parts[3]])
    return found


def code_segment(binary):
    """(virtual address, file offset, size) of the executable load segment."""
    out = subprocess.run(["readelf", "-lW", binary], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] == "LOAD" and "E" in parts[-2]:
            return int(parts[2], 16), int(parts[1], 16), int(parts[5], 16)
    sys.exit(f"{binary}: no executable segment")


def resident_pages(binary, pid):
    """Virtual addresses (as linked) of the code pages of `binary` that `pid` has mapped."""
    vaddr, offset, _ = code_segment(binary)
    real = os.path.realpath(binary)
    pages = set()
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        for line in maps:
            parts = line.split()
            if len(parts) < 6 or parts[5] != real or "x" not in parts[1]:
                continue
            start, end = (int(x, 16) for x in parts[0].split("-"))
            # The linked address of the mapping's first byte.
            linked = vaddr + (int(parts[2], 16) - offset)
            for address in range(start, end, PAGE):
                pagemap.seek(address // PAGE * 8)
                if struct.unpack("<Q", pagemap.read(8))[0] >> 63:
                    pages.add(linked + address - start)
    return pages


def candidates(binary, pid, exclude):
    skip = {line.strip() for line in open(exclude)}
    pages = resident_pages(binary, pid)
    for address, (size, names) in sorted(functions(binary).items()):
        if any(name in skip for name in names):
            continue
        first, last = address // PAGE * PAGE, (address + size - 1) // PAGE * PAGE
        if any(page in pages for page in range(first, last + 1, PAGE)):
            print(f"{address:x}")


def file_offset(binary):
    vaddr, offset, _ = code_segment(binary)
    return lambda address: address - vaddr + offset


def add(binary, listed):
    remove()
    to_file = file_offset(binary)
    real = os.path.realpath(binary)
    added = refused = 0
    events = os.open(f"{TRACING}/uprobe_events", os.O_WRONLY | os.O_APPEND)
    try:
        for line in open(listed):
            address = int(line, 16)
            try:
                os.write(events, f"p:{GROUP}/f{address:x} {real}:0x{to_file(address):x}\n".encode())
                added += 1
            except OSError:
                refused += 1
    finally:
        os.close(events)
    if added:
        with open(f"{TRACING}/events/{GROUP}/enable", "w") as enable:
            enable.write("1")
    print(f"native_functions.py: {added} functions probed, {refused} refused by the kernel",
          file=sys.stderr)


def collect(binary):
    names = functions(binary)
    calls = []
    for line in open(f"{TRACING}/uprobe_profile"):
        parts = line.split()
        if len(parts) == 3 and parts[1].startswith("f") and int(parts[2]) > 0:
            calls.append((int(parts[2]), int(parts[1][1:], 16)))
    remove()
    for count, address in sorted(calls, key=lambda c: (-c[0], c[1])):
        for name in names.get(address, (0, []))[1]:
            print(name, count)


def remove():
    enable = f"{TRACING}/events/{GROUP}/enable"
    if os.path.exists(enable):
        with open(enable, "w") as f:
            f.write("0")
    probes = [line.split()[0].split(":", 1)[1] for line in open(f"{TRACING}/uprobe_events")
              if f":{GROUP}/" in line]
    events = os.open(f"{TRACING}/uprobe_events", os.O_WRONLY | os.O_APPEND)
    try:
        for probe in probes:
            os.write(events, f"-:{probe}\n".encode())
    finally:
        os.close(events)


def main(argv):
    commands = {"candidates": (candidates, 3), "add": (add, 2), "collect": (collect, 1), "remove": (remove, 0)}
    if len(argv) < 2 or argv[1] not in commands or len(argv) - 2 != commands[argv[1]][1]:
        sys.exit(__doc__)
    if argv[1] != "candidates" and not os.path.exists(f"{TRACING}/uprobe_events"):
        sys.exit(f"native_functions.py: no tracefs at {TRACING} "
                 f"(as root: mount -t tracefs nodev {TRACING})")
    if not os.access(f"{TRACING}/uprobe_events", os.W_OK) and argv[1] != "candidates":
        sys.exit(f"native_functions.py: {TRACING}/uprobe_events is not writable (run as root)")
    commands[argv[1]][0](*argv[2:])


if __name__ == "__main__":
    main(sys.argv)
