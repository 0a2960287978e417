alias ll="ls -la"
alias ports="ss -ltnp"
