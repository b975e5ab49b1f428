#!/usr/bin/env bash
# The vendor path end to end: install oar (SDK, core, runner, plugins) into a
# temporary prefix, copy sdk/template out of the source tree, configure and
# build it with only -DCMAKE_PREFIX_PATH=<prefix>, then run the installed
# oar-conformance on the result.
#   install_and_build_template.sh <oar build dir> <oar source dir> [cmake]
set -euo pipefail
build=$1
src=$2
cmake=${3:-cmake}
work=$(mktemp -d /tmp/oar-sdk-test-XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

run() {  # run quietly; show the log on failure
  local log=$work/$1.log
  shift
  if ! "$@" >"$log" 2>&1; then
    echo "FAILED: $*" >&2
    cat "$log" >&2
    exit 1
  fi
}

run install "$cmake" --install "$build" --prefix "$prefix"
for f in include/oar/plugin_api.h include/oar/plugin_util.h include/oar/plugin.hpp \
         lib/cmake/OarSDK/OarSDKConfig.cmake lib/cmake/OarSDK/OarSDKConfigVersion.cmake \
         lib/cmake/OarSDK/OarPlugin.cmake lib/cmake/OarSDK/oar_plugin.map \
         bin/oar-conformance lib/oar/plugins/liboar_mock.so; do
  [[ -e "$prefix/$f" ]] || { echo "FAILED: the install lacks $f" >&2; exit 1; }
done

cp -r "$src/sdk/template" "$work/myplugin"
rm -rf "$work/myplugin/build"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
run configure "$cmake" -S "$work/myplugin" -B "$work/myplugin/build" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
run build "$cmake" --build "$work/myplugin/build"
plugin=$work/myplugin/build/liboar_template.so
[[ -f "$plugin" ]] || { echo "FAILED: no $plugin after the build" >&2; exit 1; }

# Only the prefix was used: no path into the oar sources or build tree.
if grep -q -e "$src/" -e "$build/" "$work/myplugin/build/compile_commands.json" "$work/myplugin/build/CMakeCache.txt"; then
  echo "FAILED: the template build refers to the oar source or build tree:" >&2
  grep -h -e "$src/" -e "$build/" "$work/myplugin/build/compile_commands.json" "$work/myplugin/build/CMakeCache.txt" >&2
  exit 1
fi
# Exactly one exported symbol, and the ABI stamp.
exported=$(nm -D --defined-only "$plugin" | awk '{print $3}')
[[ "$exported" == "oar_plugin_init" ]] || { echo "FAILED: exported symbols: $exported" >&2; exit 1; }
readelf -p .oar_abi "$plugin" | grep -q "oar-plugin-abi" || { echo "FAILED: no .oar_abi stamp" >&2; exit 1; }

"$prefix/bin/oar-conformance" --plugin "$plugin" --tier ci --report "$work/report.json"
grep -q '"reference_plugins"' "$work/report.json"
grep -q "$prefix/lib/oar/plugins/liboar_mock.so" "$work/report.json" || {
  echo "FAILED: the installed runner did not use the installed mock as reference" >&2; exit 1; }
echo "template built out of tree against $prefix and passed the ci tier"
