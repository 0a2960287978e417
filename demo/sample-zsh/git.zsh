alias gs="git status"
alias gl="git log --oneline -${config:log-lines}"
