"""Markdown tables of a results file (for ``docs/benchmarks.md``).

    .venv-bench/bin/python bench/report.py [bench/results/latest.json]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def kb(n: float) -> str:
    if n >= 1024 * 1024:
        return f"{n / 1024 / 1024:.1f} MB"
    return f"{n / 1024:.0f} KB"


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "results" / "latest.json"
    r: dict[str, Any] = json.loads(path.read_text())
    backends = [b for b in ("memory", "sqlite", "postgres") if b in r.get("backends", [])]
    out: list[str] = []
    m = r["machine"]
    out.append(f"Run of {r['started']} ({'quick' if r['quick'] else 'full'}), "
               f"{r['elapsed_s'] / 60:.1f} min; load average at start "
               f"{', '.join(f'{x:.2f}' for x in m['loadavg'])}, at end "
               f"{', '.join(f'{x:.2f}' for x in r['loadavg_end'])}."
               + (" Sensitivity check: GC frozen for (a) and (b)." if r.get("gc_freeze") else "")
               + (" Sensitivity check: interlock's tool is an async function for (a) and (b)."
                  if r.get("async_tool") else "") + "\n")
    if "a" in r:
        out.append("| backend | LangChain median | LangChain p95 | interlock median | "
                   "interlock p95 | ratio (median) | ratio (p95) | target |")
        out.append("|---|---:|---:|---:|---:|---:|---:|---:|")
        for b in backends:
            a = r["a"][b]
            lc, il = a["langchain"], a["interlock"]
            ok = "met" if a["ratio_median"] >= a["target"] else "**missed**"
            out.append(f"| {b} | {lc['median_ms']:.2f} ms | {lc['p95_ms']:.2f} ms | "
                       f"{il['median_ms']:.2f} ms | {il['p95_ms']:.2f} ms | "
                       f"{a['ratio_median']:.1f}x | {a['ratio_p95']:.1f}x | "
                       f"≥{a['target']:.0f}x: {ok} |")
        out.append("")
        out.append("| backend | LangChain: to the pause / approve→answer | "
                   "interlock: to the pause / approve→answer |")
        out.append("|---|---:|---:|")
        for b in backends:
            a = r["a"][b]
            lc, il = a["langchain"], a["interlock"]
            out.append(f"| {b} | {lc['pause_median_ms']:.2f} / {lc['resume_median_ms']:.2f} ms"
                       f" | {il['pause_median_ms']:.2f} / {il['resume_median_ms']:.2f} ms |")
        out.append("")
    if "b" in r:
        out.append("| backend | K | LangChain cycle K | interlock cycle K | ratio | "
                   "LangChain bytes | interlock bytes | ratio |")
        out.append("|---|---:|---:|---:|---:|---:|---:|---:|")
        for b in backends:
            for k, row in sorted(r["b"][b]["marks"].items(), key=lambda kv: int(kv[0])):
                lc, il = row["langchain"], row["interlock"]
                out.append(f"| {b} | {k} | {lc['cycle_median5_ms']:.2f} ms | "
                           f"{il['cycle_median5_ms']:.2f} ms | {row['ratio_time']:.1f}x | "
                           f"{kb(lc['bytes'])} | {kb(il['bytes'])} | {row['ratio_bytes']:.1f}x |")
        out.append("")
        out.append("| backend | window | LangChain first → last | ratio | "
                   "interlock first → last | ratio |")
        out.append("|---|---:|---:|---:|---:|---:|")
        for b in backends:
            g = r["b"][b]["growth"]
            w = r["b"][b]["growth_window"]
            lc, il = g["langchain"], g["interlock"]
            out.append(f"| {b} | {w} cycles | {kb(lc['first'])} → {kb(lc['last'])} | "
                       f"{lc['ratio']:.2f}x | {kb(il['first'])} → {kb(il['last'])} | "
                       f"{il['ratio']:.2f}x |")
        out.append("")
    if "c" in r:
        out.append("| backend | LangChain resume call | interlock resume call | ratio | "
                   "LangChain process (imports) | interlock process (imports) | ratio |")
        out.append("|---|---:|---:|---:|---:|---:|---:|")
        for b in backends:
            if b not in r["c"]:
                continue
            c = r["c"][b]
            lc, il = c["langchain"], c["interlock"]
            out.append(f"| {b} | {lc['resume_s_median'] * 1e3:.1f} ms | "
                       f"{il['resume_s_median'] * 1e3:.1f} ms | {c['ratio_resume']:.1f}x | "
                       f"{lc['process_s_median'] * 1e3:.0f} ms ({lc['import_s_median'] * 1e3:.0f})"
                       f" | {il['process_s_median'] * 1e3:.0f} ms "
                       f"({il['import_s_median'] * 1e3:.0f}) | {c['ratio_process']:.1f}x |")
        out.append("")
    if "d" in r:
        out.append("| backend | system | create | per thread | bytes | peak RSS before → after "
                   "| growth | resume one (median) |")
        out.append("|---|---|---:|---:|---:|---:|---:|---:|")
        for b in backends:
            if b not in r["d"]:
                continue
            for name in ("langchain", "interlock"):
                o = r["d"][b][name]
                out.append(f"| {b} | {name} | {o['create_s']:.1f} s | "
                           f"{o['per_thread_ms']:.2f} ms | {kb(o['bytes'])} | "
                           f"{o['maxrss_before_kb'] / 1024:.0f} → "
                           f"{o['maxrss_after_kb'] / 1024:.0f} MB | "
                           f"+{o['peak_growth_mb']:.1f} MB | {o['resume_median_ms']:.2f} ms |")
        out.append("")
    if "e" in r:
        e = r["e"]
        out.append("| system (memory) | median | p95 | ratio to interlock (median) | target |")
        out.append("|---|---:|---:|---:|---:|")
        for name in ("interlock", "langchain", "pydantic-ai", "openai-agents"):
            o = e[name]
            target = ""
            if name in ("pydantic-ai", "openai-agents"):
                ok = "met" if o["ratio_median"] >= e["target"] else "**missed**"
                target = f"≥{e['target']:.0f}x: {ok}"
            out.append(f"| {name} | {o['median_ms']:.2f} ms | {o['p95_ms']:.2f} ms | "
                       f"{o['ratio_median']:.1f}x | {target} |")
        out.append("")
    if "import" in r:
        i = r["import"]
        out.append("| statement | import (median) | whole process |")
        out.append("|---|---:|---:|")
        for name, stmt in (("interlock", "import interlock"),
                           ("langchain", "import langchain.agents")):
            out.append(f"| `{stmt}` | {i[name]['import_s']:.3f} s | "
                       f"{i[name]['process_s']:.3f} s |")
        out.append("")
    print("\n".join(out))


if __name__ == "__main__":
    main()
