"""The papers' figures, regenerated from tidy result tables (matplotlib, no pyplot state).

* :mod:`.data` — tidy tables for the figures from the trial, summary and statistics tables (pure functions);
* :mod:`.threedpc`, :mod:`.mvh`, :mod:`.psychophysics`, :mod:`.mindset` — one function per figure, data in,
  :class:`matplotlib.figure.Figure` out;
* :mod:`.style` — palette (Okabe & Ito; humans in vermillion), two-column paper sizes, :func:`.style.save`
  (PNG + vector PDF, atomically).

``eval.html_report`` decides which figures the available results support and writes them under
``stats/figures/``.
"""
