"""`gpuplan serve`: the planner as a web app and a JSON API (FastAPI, Jinja2, htmx, plotly.js; all assets vendored).

A thin door onto the library: requests are `gpuplan.service` models, answers are the CLI's `--json`
documents, stored as immutable plans (`store.py`) and rendered on the server (`pages.py`, `templates/`).
Its libraries (FastAPI, Jinja2, SQLAlchemy, Alembic, uvicorn) are gpuplan's own dependencies; the `web` extra
adds PostgreSQL and a faster server.
"""
