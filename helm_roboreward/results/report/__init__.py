"""``roboreward report``: macro MAE with clustered bootstrap intervals, pairwise tests, tables and plots."""
