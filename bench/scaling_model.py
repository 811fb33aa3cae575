#!/usr/bin/env python3
"""How long the tiles of A·Aᵀ take on several GPUs when every panel must first cross from the
host: a model of the resident, panel-sharing plan (docs/design-notes.md, "Four GPUs and the
host's memory bandwidth").

    python3 bench/scaling_model.py [--panels 33] [--panel-gb 0.768] [--devices 4]
        [--rate 60] [--tile-ms 5.7] [--peer-gbs 100] [--sliced] [--split W S]
        [--one-rate 25] [--setup-ms 10 55] [--tail-ms 10 10]

The model follows the job as outcore runs it:
  - panel p is given to device p mod D (oc_panel_exchange_assign) and each device uploads its
    panels one after the other, in the order the tiles first need them; the devices share the
    host's aggregate rate (--rate, GB/s) equally, so each uploads at rate / D;
  - a device that needs another's panel copies it over the peer link (--peer-gbs), one copy
    at a time, once it is published;
  - the tiles are the upper triangle in column order (the first-need order); a free device
    takes the rest of the current column, at most a (2 x D)-th of the tiles left (the queue's
    groups, engine/scheduler.h), and runs them in order, each --tile-ms long, each waiting for
    both its panels on the device.
--sliced instead has every device upload a D-th of every panel, so that each panel is
complete after 1/D of the time (a variant, not what outcore does).
--split W S models tiles that start on part of K (src/gram/cuda/gram_window.h): the first W panels
go up in S slices of their columns, slice 0 of all W first, and each tile among them runs
slice by slice, its counts kept on the device that ran its first slice until the last; the
other panels go up whole after them. The counts of the W(W+1)/2 window tiles stay on the
devices meanwhile (151 MB a tile of 6144 rows in int32), and each slice but the first and
last reads and writes them (--acc-gbs: the device memory's rate for that traffic).

It prints the span of the tiles phase, each device's idle time waiting for panels, and the
same with an unbounded host rate (the queue's own imbalance). Then the efficiency the issue
asks for, a job on D devices against D times one device's: each job is its part's set-up,
the tiles phase and its tail (--setup-ms and --tail-ms, one device's and D devices', from a
trace: "setup: all", and the lists and commit after the tiles), one device alone staging at
--one-rate GB/s. Compare with a traced run
(OUTCORE_TRACE=1: "GPU busy ... of the span", "idle inside"), whose busy time per tile gives
--tile-ms (busy seconds / tiles of that device).
"""
import argparse
import heapq


def simulate(panels, panel_gb, devices, rate, tile_ms, peer_gbs, sliced=False, split=(0, 1), acc_ms=0.0):
    """Returns (end of the last tile in ms, [idle ms per device]). split = (W, S): the first W
    panels go up in S slices of K, slice by slice, and their tiles run slice by slice on the
    device that took the first (its counts stay there between slices). acc_ms: one pass over a
    tile's partial counts in device memory; a window tile's first slice writes them, each
    middle slice reads and writes them, its last slice reads them."""
    window, slices = split if split[0] > 0 and split[1] > 1 else (0, 1)

    def piece(p, s):  # the unit that crosses: a slice of a window panel, else a whole panel
        return (p, s if p < window else -1)

    def piece_gb(p):
        return panel_gb / slices if p < window else panel_gb

    order_up = [piece(p, s) for s in range(slices) for p in range(window)] + [piece(p, -1) for p in range(window, panels)]
    avail = {}
    if sliced:
        t = 0.0
        for k in order_up:
            t += piece_gb(k[0]) / rate * 1000.0
            avail[k] = t
    else:
        clock = [0.0] * devices
        for k in order_up:
            d = k[0] % devices
            clock[d] += piece_gb(k[0]) / (rate / devices) * 1000.0
            avail[k] = clock[d]
    local = [dict() for _ in range(devices)]
    peer_free = [0.0] * devices

    def ready(d, k, book):
        if k in local[d]:
            return local[d][k]
        if sliced:
            copy = piece_gb(k[0]) * (devices - 1) / devices / peer_gbs * 1000.0
        else:
            copy = 0.0 if k[0] % devices == d else piece_gb(k[0]) / peer_gbs * 1000.0
        done = max(avail[k], peer_free[d]) + copy
        if book:
            if copy:
                peer_free[d] = done
            local[d][k] = done
        return done

    def need(d, p, s, book):  # a whole tile needs every slice of a window panel
        if s < 0 and p < window:
            return max(ready(d, (p, x), book) for x in range(slices))
        return ready(d, piece(p, s), book)

    def item_ready(d, item, book):
        i, j, s = item
        r = max(need(d, i, s, book), need(d, j, s, book))
        return max(r, finished[(i, j, s - 1)]) if s > 0 else r

    # The shared queue: the window's tiles on their first slice, then the other tiles, each in
    # column order (the first-need order); a device takes the rest of the current column, at
    # most a (2 x D)-th of the items left (the queue's groups). A window tile's later slices
    # wait on the device that ran its first.
    shared = [(i, j, 0) for j in range(window) for i in range(j + 1)]
    shared += [(i, j, -1) for j in range(window, panels) for i in range(j + 1)]
    pending = [[] for _ in range(devices)]
    finished = {}
    pos, n = 0, len(shared)
    left = n + (slices - 1) * window * (window + 1) // 2
    clock_d, idle = [0.0] * devices, [0.0] * devices
    while left:
        d = min(range(devices), key=lambda x: clock_d[x])
        own = min(pending[d], key=lambda it: item_ready(d, it, False), default=None)
        if pos < n and (own is None or item_ready(d, shared[pos], False) <= item_ready(d, own, False)):
            column, taken, cap = shared[pos][1], 0, max(1, (n - pos) // (2 * devices))
            group = []
            while pos < n and shared[pos][1] == column and taken < cap:
                group.append(shared[pos])
                pos += 1
                taken += 1
        elif own is not None:
            pending[d].remove(own)
            group = [own]
        else:  # nothing for this device now: wait for the next device to finish
            later = [c for c in clock_d if c > clock_d[d]]
            clock_d[d] = min(later) if later else clock_d[d] + tile_ms
            continue
        for item in group:
            r = item_ready(d, item, True)
            idle[d] += max(0.0, r - clock_d[d])
            passes = 0 if item[2] < 0 else (1 if item[2] in (0, slices - 1) else 2)
            clock_d[d] = max(clock_d[d], r) + (tile_ms / slices + passes * acc_ms if item[2] >= 0 else tile_ms)
            finished[item] = clock_d[d]
            left -= 1
            if 0 <= item[2] < slices - 1:
                pending[d].append((item[0], item[1], item[2] + 1))
    return max(clock_d), idle


def acc_pass_ms(args):
    """One pass over a tile's int32 partial counts (--tile-rows squared) at --acc-gbs."""
    return args.tile_rows * args.tile_rows * 4 / (args.acc_gbs * 1e9) * 1000.0


def efficiency(args, split):
    """(one device's job ms, D devices' job ms, efficiency) for the namespace of main's
    options: the same tiles on one device at --one-rate, whole, and on --devices at --rate,
    with `split`."""
    acc = acc_pass_ms(args)
    # One device runs whole tiles: it has no ramp to shorten that pays for the partial counts'
    # traffic (--split on one device: 2893 ms against 2880 at S = 4).
    one, _ = simulate(args.panels, args.panel_gb, 1, args.one_rate, args.tile_ms, args.peer_gbs)
    many, _ = simulate(args.panels, args.panel_gb, args.devices, args.rate, args.tile_ms, args.peer_gbs, args.sliced,
                       split, acc)
    one_job = args.setup_ms[0] + one + args.tail_ms[0]
    many_job = args.setup_ms[1] + many + args.tail_ms[1]
    return one_job, many_job, one_job / (args.devices * many_job)


def parser():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--panels", type=int, default=33)
    ap.add_argument("--panel-gb", type=float, default=0.768)
    ap.add_argument("--devices", type=int, default=4)
    ap.add_argument("--rate", type=float, default=60.0, help="host to all GPUs, GB/s in all")
    ap.add_argument("--tile-ms", type=float, default=5.7)
    ap.add_argument("--peer-gbs", type=float, default=100.0)
    ap.add_argument("--sliced", action="store_true")
    ap.add_argument("--split", nargs=2, type=int, metavar=("W", "S"), default=(0, 1),
                    help="the first W panels uploaded and computed in S slices of K")
    ap.add_argument("--tile-rows", type=int, default=6144, help="a tile's edge (for --split's partial counts)")
    ap.add_argument("--acc-gbs", type=float, default=3000.0,
                    help="device memory rate for --split's partial counts, GB/s (0.15 GB a pass at 6144)")
    ap.add_argument("--one-rate", type=float, default=25.0, help="host to one GPU alone, GB/s")
    ap.add_argument("--setup-ms", nargs=2, type=float, metavar=("ONE", "MANY"), default=(10.0, 55.0),
                    help="a part's set-up on one device and on --devices")
    ap.add_argument("--tail-ms", nargs=2, type=float, metavar=("ONE", "MANY"), default=(10.0, 10.0),
                    help="after the tiles phase (lists, commit) on one device and on --devices")
    return ap


def main():
    a = parser().parse_args()
    split = tuple(a.split)
    tiles = a.panels * (a.panels + 1) // 2
    busy = tiles * a.tile_ms / a.devices
    acc = acc_pass_ms(a)
    span, idle = simulate(a.panels, a.panel_gb, a.devices, a.rate, a.tile_ms, a.peer_gbs, a.sliced, split, acc)
    free_span, _ = simulate(a.panels, a.panel_gb, a.devices, 1e12, a.tile_ms, a.peer_gbs, a.sliced, split, acc)
    print("%d tiles of %.1f ms on %d devices: %.0f ms each if evenly shared" % (tiles, a.tile_ms, a.devices, busy))
    print("host at %.0f GB/s: tiles phase %.0f ms; idle waiting for panels %s ms" %
          (a.rate, span, ", ".join("%.0f" % x for x in idle)))
    print("host unbounded: tiles phase %.0f ms (the queue's own imbalance)" % free_span)
    one_job, many_job, eff = efficiency(a, split)
    print("job: %.0f ms on one device (%.0f GB/s), %.0f ms on %d: efficiency %.1f%%" %
          (one_job, a.one_rate, many_job, a.devices, 100.0 * eff))


if __name__ == "__main__":
    main()
