#!/usr/bin/env python3
"""How long the tiles of A·Aᵀ take on several GPUs when every panel must first cross from the
host: a model of the resident, panel-sharing plan (docs/design-notes.md, "Four GPUs and the
host's memory bandwidth").

    python3 bench/scaling_model.py [--panels 33] [--panel-gb 0.768] [--devices 4]
        [--rate 60] [--tile-ms 5.7] [--peer-gbs 100] [--sliced]

The model follows the job as outcore runs it:
  - panel p is given to device p mod D (oc_panel_exchange_assign) and each device uploads its
    panels one after the other, in the order the tiles first need them; the devices share the
    host's aggregate rate (--rate, GB/s) equally, so each uploads at rate / D;
  - a device that needs another's panel copies it over the peer link (--peer-gbs), one copy
    at a time, once it is published;
  - the tiles are the upper triangle in column order (the first-need order); a free device
    takes the rest of the current column, at most a (2 x D)-th of the tiles left (the queue's
    groups, exec/scheduler.h), and runs them in order, each --tile-ms long, each waiting for
    both its panels on the device.
--sliced instead has every device upload a D-th of every panel, so that each panel is
complete after 1/D of the time (a variant, not what outcore does).

It prints the span of the tiles phase, each device's idle time waiting for panels, and the
same with an unbounded host rate (the queue's own imbalance). Compare with a traced run
(OUTCORE_TRACE=1: "GPU busy ... of the span", "idle inside"), whose busy time per tile gives
--tile-ms (busy seconds / tiles of that device).
"""
import argparse
import heapq


def simulate(panels, panel_gb, devices, rate, tile_ms, peer_gbs, sliced=False):
    """Returns (end of the last tile in ms, [idle ms per device])."""
    avail = {}
    if sliced:
        t = 0.0
        for p in range(panels):
            t += panel_gb / rate * 1000.0
            avail[p] = t
    else:
        clock = [0.0] * devices
        for p in range(panels):
            d = p % devices
            clock[d] += panel_gb / (rate / devices) * 1000.0
            avail[p] = clock[d]
    local = [dict() for _ in range(devices)]
    peer_free = [0.0] * devices

    def ready(d, p):
        if p in local[d]:
            return local[d][p]
        if sliced:
            copy = panel_gb * (devices - 1) / devices / peer_gbs * 1000.0
        else:
            copy = 0.0 if p % devices == d else panel_gb / peer_gbs * 1000.0
        start = max(avail[p], peer_free[d])
        done = start + copy
        if copy:
            peer_free[d] = done
        local[d][p] = done
        return done

    order = [(i, j) for j in range(panels) for i in range(j + 1)]
    pos, n = 0, len(order)
    free = [(0.0, d) for d in range(devices)]
    heapq.heapify(free)
    end, idle = [0.0] * devices, [0.0] * devices
    while pos < n:
        now, d = heapq.heappop(free)
        column, taken, cap = order[pos][1], 0, max(1, (n - pos) // (2 * devices))
        t = now
        while pos < n and order[pos][1] == column and taken < cap:
            i = order[pos][0]
            pos += 1
            taken += 1
            r = max(ready(d, i), ready(d, column))
            idle[d] += max(0.0, r - t)
            t = max(t, r) + tile_ms
        end[d] = t
        heapq.heappush(free, (t, d))
    return max(end), idle


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--panels", type=int, default=33)
    ap.add_argument("--panel-gb", type=float, default=0.768)
    ap.add_argument("--devices", type=int, default=4)
    ap.add_argument("--rate", type=float, default=60.0, help="host to all GPUs, GB/s in all")
    ap.add_argument("--tile-ms", type=float, default=5.7)
    ap.add_argument("--peer-gbs", type=float, default=100.0)
    ap.add_argument("--sliced", action="store_true")
    a = ap.parse_args()
    tiles = a.panels * (a.panels + 1) // 2
    busy = tiles * a.tile_ms / a.devices
    span, idle = simulate(a.panels, a.panel_gb, a.devices, a.rate, a.tile_ms, a.peer_gbs, a.sliced)
    free_span, _ = simulate(a.panels, a.panel_gb, a.devices, 1e12, a.tile_ms, a.peer_gbs, a.sliced)
    print("%d tiles of %.1f ms on %d devices: %.0f ms each if evenly shared" % (tiles, a.tile_ms, a.devices, busy))
    print("host at %.0f GB/s: tiles phase %.0f ms; idle waiting for panels %s ms" %
          (a.rate, span, ", ".join("%.0f" % x for x in idle)))
    print("host unbounded: tiles phase %.0f ms (the queue's own imbalance)" % free_span)


if __name__ == "__main__":
    main()
