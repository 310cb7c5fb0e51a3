"""Fleet views: merging the reports of many nodes."""
