"""Report: results, metrics, intervals, comparisons; console, JSON, Markdown, HTML, LaTeX."""
