# The options both chaos modes take (sourced by scripts/chaos.sh and scripts/chaos_processes.sh,
# not run): -n RUNS, -s SEED, -t SECONDS, -o FILE. Set runs, seed, budget and out to their
# defaults first; they are overwritten by what the command line gives, and checked.
parse_chaos_options() {
  local opt OPTIND=1
  while getopts "n:s:t:o:h" opt; do
    case "$opt" in
      n) runs="$OPTARG" ;;
      s) seed="$OPTARG" ;;
      t) budget="$OPTARG" ;;
      o) out="$(realpath -m "$OPTARG")" ;;
      *) usage ;;
    esac
  done
  [[ $runs =~ ^[1-9][0-9]*$ && $seed =~ ^[0-9]+$ && $budget =~ ^[1-9][0-9]*$ ]] || usage
}
