"""What the gang experiments share: the paper they reproduce."""
PAPER = "Multilevel two-queue coscheduling (Zhou, Brent, Qu 1997)"
