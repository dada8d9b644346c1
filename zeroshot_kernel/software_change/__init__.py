"""Software change: one owner changes code in its own worktree, reviewers under the review
discipline, trusted checks and trusted git delivery (none, push, pull request, ship)."""
