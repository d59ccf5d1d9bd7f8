"""Results: the leaderboard schema and project files, the terminal leaderboard, media export, report, publish."""
