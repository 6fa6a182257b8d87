# Pools the first-delta samples of bench runs (Phase.samples) per path: p50 / p95 from the
# stand-in receiving the model request and from the user's request, as bench/suite/stats.ts
# takes a percentile. `python3 pool.py 'ab3-O-*.json' 'ab3-N-*.json'` (O: main's client/events.ts,
# client/live-model.ts, server/ag-ui.ts, server/app.ts; N: w7-delta's), run in this folder.
import glob
import json
import math
import sys


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float('nan')
    return xs[min(len(xs) - 1, max(0, math.ceil(p / 100 * len(xs)) - 1))]


for group in sys.argv[1:]:
    files = sorted(glob.glob(group))
    pooled = {}
    loads = []
    for f in files:
        for ph in json.load(open(f))['phases']:
            if ph['scenario'] != 'first-delta':
                continue
            loads.append(ph['loadAverage1m'])
            for k, v in ph.get('samples', {}).items():
                pooled.setdefault(k, []).extend(v)
    print(f'{group}: {len(files)} runs, load {min(loads):.1f}–{max(loads):.1f}')
    for p in ['sdk', 'sse', 'ag-ui']:
        r = pooled.get(f'{p}RequestToFirstDeltaMs', [])
        s = pooled.get(f'{p}SentToFirstDeltaMs', [])
        print(f'  {p:6} from the request {pct(r, 50):4.0f} / {pct(r, 95):4.0f}   from the user\'s request {pct(s, 50):4.0f} / {pct(s, 95):4.0f}   n={len(r)}')
