# Pools the per-round figures of the bench logs here (medians over every round of every run,
# per variant and S) and prints the per-call ratios and the per-step ratio with starts
# amortised away. `python3 pool.py` in this folder. The first pair's second "after" run is left
# out: it ran while the old agent.ts was put back in the worktree for a moment (its history
# table shows the old reports), so it measured the old code.
import os
os.chdir(os.path.dirname(os.path.abspath(__file__)))
import re,sys,statistics as st
def parse(path, skip_runs=()):
    runs=[];cur=[]
    for line in open(path):
        m=re.match(r"\[sub-agents bench\] round (\d+) S=(\d+) (\w+): (\d+) steps, worker (\d+) ms \+ server (\d+) ms CPU",line)
        if m:
            r,s,v,steps,w,sv=m.groups()
            if r=='1' and s=='2' and cur and any(x[0]!='1' for x in cur): runs.append(cur);cur=[]
            cur.append((r,int(s),v,int(steps),int(w),int(sv)))
    if cur: runs.append(cur)
    return [x for i,run in enumerate(runs) if i not in skip_runs for x in run]
def report(name, samples):
    out={}
    for S in (2,8):
        for v in ('children','solo'):
            xs=[x for x in samples if x[1]==S and x[2]==v]
            out[(S,v)]=dict(n=len(xs),steps=xs[0][3],tot=st.median([x[4]+x[5] for x in xs]),w=st.median([x[4] for x in xs]),s=st.median([x[5] for x in xs]))
    print(f"== {name}")
    for S in (2,8):
        c,so=out[(S,'children')],out[(S,'solo')]
        print(f"S={S} n={c['n']}: children {c['tot']/c['steps']:.1f} ms/call (worker {c['w']/c['steps']:.1f} server {c['s']/c['steps']:.1f}) solo {so['tot']/so['steps']:.1f} (worker {so['w']/so['steps']:.1f} server {so['s']/so['steps']:.1f}) ratio {c['tot']/c['steps']/(so['tot']/so['steps']):.2f}")
    dc=(out[(8,'children')]['tot']-out[(2,'children')]['tot'])/24; ds=(out[(8,'solo')]['tot']-out[(2,'solo')]['tot'])/24
    dcw=(out[(8,'children')]['w']-out[(2,'children')]['w'])/24; dsw=(out[(8,'solo')]['w']-out[(2,'solo')]['w'])/24
    dcs=(out[(8,'children')]['s']-out[(2,'children')]['s'])/24; dss=(out[(8,'solo')]['s']-out[(2,'solo')]['s'])/24
    print(f"marginal: child step {dc:.1f} ms (worker {dcw:.1f} server {dcs:.1f}), session step {ds:.1f} ms (worker {dsw:.1f} server {dss:.1f}), ratio {dc/ds:.2f}")
A=parse('after-list_dir-3runs.log')+parse('after-list_dir-first-pair.log',skip_runs=(1,))
B=parse('before-list_dir-3runs.log')+parse('before-list_dir-first-pair.log')
report('list_dir, after (w6-48), 4 runs x 3 rounds',A)
report('list_dir, before (c2083a5), 5 runs x 3 rounds',B)
report('run_command, after (w6-48), 1 run x 3 rounds',parse('after-run_command.log'))
report('run_command, before (c2083a5), 1 run x 3 rounds',parse('before-run_command.log'))
