"""Routing: pick each turn's workflow when a log does not name it (MPNet or an LLM)."""


from sage_tod.routing.router import Route, Router, route, route_detailed

__all__ = ["Route", "Router", "route", "route_detailed"]
