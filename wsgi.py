"""Gunicorn's entry point: ``gunicorn wsgi:app`` (``hango serve`` sets it up)."""

from hango.app import create_app

app = create_app()
