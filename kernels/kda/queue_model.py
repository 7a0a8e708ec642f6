"""A model of RESULTS.md step 13's design (scan steps as work items beside the preparation, in
CTAs that fit two an SM), to count its makespan before it is built. Event-driven over 2 x 132 slots:
preparation items (chunk c of head h; chunk-major) and scan steps (window w of Wc chunks of one
head's V half; ready once its window's items and its step w - 1 are done).

Roles: the first slot of an SM takes scan steps (in order, waiting for a step's inputs), and a
preparation item only when no step is ready; the second takes preparation items only. Without roles
the slots that free together take the scan steps together, and the steps pair with each other rather
than with the preparation they should run beside.

Rates (microseconds; the H200, RESULTS.md steps 9 and 13): a preparation item tp_pair beside another
(16.5), tp_solo beside a scan step or an idle slot (~11.8, step 9's H100 ratio; not measured for this
design); a scan step ts a chunk (scan_step_probe measures it) plus tov for the state's load and
store. Jitter (+-15% on the preparation) keeps the slots from moving in lockstep.

Usage: python3 kernels/kda/queue_model.py [ts ...]
"""
import random
import sys


def makespan(seqs, H, Wc, ts, tp_pair=16.5, tp_solo=11.8, tov=1.0, sms=132, jitter=0.15, seed=1):
    rnd = random.Random(seed)
    preps = [(n, h, c) for c in range(max(seqs)) for n, nc in enumerate(seqs) if c < nc for h in range(H)]
    steps = [(n, h, vh, w) for w in range((max(seqs) + Wc - 1) // Wc) for n, nc in enumerate(seqs)
             if w * Wc < nc for h in range(H) for vh in range(2)]
    done = {}  # item -> time it finished

    def inputs(step):
        n, h, vh, w = step
        chunks = range(w * Wc, min(seqs[n], (w + 1) * Wc))
        return [("p", n, h, c) for c in chunks] + ([("s", n, h, vh, w - 1)] if w else []), len(chunks)

    def ready(deps, t):
        return all(d in done and done[d] <= t + 1e-9 for d in deps)

    slots, t, next_prep, next_step = [None] * (2 * sms), 0.0, 0, 0

    def take(i):
        nonlocal next_prep, next_step
        if i % 2 == 0 and next_step < len(steps):
            deps, nc = inputs(steps[next_step])
            if ready(deps, t) or next_prep == len(preps):
                slots[i] = ["s", ts * nc + tov, ("s",) + steps[next_step], deps]
                next_step += 1
                return
        if next_prep < len(preps):
            slots[i] = ["p", rnd.uniform(1 - jitter, 1 + jitter), ("p",) + preps[next_prep], None]
            next_prep += 1
        else:
            slots[i] = None

    for i in range(len(slots)):
        take(i)
    while any(slots) or next_step < len(steps):
        rates = []
        for i, s in enumerate(slots):
            if s is None:
                rates.append(0.0)
            elif s[0] == "s":
                rates.append(1.0 if ready(s[3], t) else 0.0)
            else:
                beside = slots[i ^ 1]
                rates.append(1.0 / (tp_pair if beside is not None and beside[0] == "p" else tp_solo))
        dts = [s[1] / r for s, r in zip(slots, rates) if s is not None and r > 0]
        if not dts:
            raise RuntimeError("no slot can move: a step waits on an item nobody holds")
        dt = min(dts)
        t += dt
        finished = []
        for i, (s, r) in enumerate(zip(slots, rates)):
            if s is not None and r > 0:
                s[1] -= r * dt
                if s[1] <= 1e-9:
                    finished.append(i)
        for i in finished:
            done[slots[i][2]] = t
        for i in finished:
            take(i)
        for i in range(0, len(slots), 2):  # a scan slot left idle takes a step once one is ready
            if slots[i] is None:
                take(i)
    return t


if __name__ == "__main__":
    ts_list = [float(x) for x in sys.argv[1:]] or [2.2, 3.3]
    print("| shape | ts (us a chunk step) | tp beside a step (us) | makespan (ms), best of Wc 8, 16 |")
    print("|---|---|---|---|")
    for name, seqs, H in [("B1 T8192 H64", [128], 64), ("B1 T8192 H96", [128], 96), ("B8 T8192 H16", [128] * 8, 16)]:
        for ts in ts_list:
            for tp_solo in (16.5, 11.8):
                ms, wc = min((makespan(seqs, H, wc, ts, tp_solo=tp_solo), wc) for wc in (8, 16))
                print(f"| {name} | {ts} | {tp_solo} | {ms / 1000:.3f} (Wc {wc}) |", flush=True)
