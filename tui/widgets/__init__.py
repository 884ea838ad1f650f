"""The panes of the main screen and the renderers they share."""
