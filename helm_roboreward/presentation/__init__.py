"""What people read: the leaderboard schema, the project files, the terminal leaderboard, media export, the report.

Imports the core, the data and the media only; no HELM (it reads the files HELM wrote).
"""
