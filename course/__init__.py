"""The course's scenery and panels (every chapter): the worlds the chapters act in, and the widgets that draw them.

``toolkit`` is the library a student reads and reuses; ``course`` is what the notebooks need around it and
nothing else imports:

    worlds/   scenery: the billing fake and service, the crash harness, Agent-427's folder, the exercises' harnesses
    present/  widgets, plots and formulas that draw what ``toolkit`` computed

Imports run one way: ``course`` imports ``toolkit``; ``toolkit`` never imports ``course``.
"""
