"""memdeck's terminal app (Textual). The engine never imports this package."""

import os

#: Frames a second Textual may paint (its ``TEXTUAL_FPS``, 60 by default), set before
#: Textual is imported; a ``TEXTUAL_FPS`` in the environment wins. A frame is painted
#: at the next tick of Textual's update timer, so at 60 a keystroke's results, drawn
#: a few ms after the search box's own frame, waited up to 16.7 ms for theirs: at 10k
#: chunks, 120×40, keystroke → results painted went from 44–45 / 66–67 ms median / p95
#: at 60 to 32–33 / 57–59 at 120 (README "Speed"). Nothing is painted while nothing
#: changes, so an idle app costs the same.
FRAMES_PER_SECOND = 120

os.environ.setdefault("TEXTUAL_FPS", str(FRAMES_PER_SECOND))
