"""Meeting teams where they already look: a CI gate, MLflow, DeepEval and Inspect.

Each integration lives in its own module and imports its library only when it
is used (`pip install 'sage-tod[mlflow]'`, `[deepeval]`, `[inspect]`), so
`import sage_tod` and the core install never pull them in. The gate needs no
extra. `conversation` is the one mapping from a chat transcript (user and
assistant messages, tool calls, per-turn state) to sage-tod turns that the
three library adapters share. See docs/integrations.md.
"""
