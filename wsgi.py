"""Gunicorn's entry point: ``gunicorn wsgi:app`` (``hango serve`` sets it up)."""

from hango import serving_collector
from hango.app import create_app
from hango.providers import ProviderSettings, load_sdks

app = create_app()
load_sdks(ProviderSettings.from_config(app.config["HANGO"]))  # no request pays for the import
# What is loaded by now (about 150,000 objects: modules, classes, the app) lives as long as the
# worker. Frozen, the collector's full passes skip it: a 10,000-message request paid 80-190 ms
# of collection without this, 15-45 ms with it (docs/performance.md). The collector's passes run
# between requests (gunicorn.conf.py's post_request), never inside one.
serving_collector.settle()
