"""The console's pages: each module reads its data and renders its templates."""
