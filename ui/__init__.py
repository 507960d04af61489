"""Shared Streamlit UI code: cached loaders, widgets, plotly chart builders."""
