# oar_add_device_plugin(NAME <name> SOURCES <src...>)
# Builds lib<name>.so exporting only `oar_plugin_init` (linker version
# script), with the plugin ABI headers on the include path. The library lands
# in ${OAR_PLUGIN_OUTPUT_DIR} (the build's default plugin directory).
set(OAR_PLUGIN_VERSION_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/oar_plugin.map")

function(oar_add_device_plugin)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES" ${ARGN})
  if(NOT ARG_NAME OR NOT ARG_SOURCES)
    message(FATAL_ERROR "oar_add_device_plugin: NAME and SOURCES are required")
  endif()
  add_library(${ARG_NAME} MODULE ${ARG_SOURCES})
  target_include_directories(${ARG_NAME} PRIVATE ${OAR_PLUGIN_API_INCLUDE_DIR})
  target_compile_definitions(${ARG_NAME} PRIVATE
    OAR_PLUGIN_BUILD_ABI_MAJOR=1 OAR_PLUGIN_BUILD_ABI_MINOR=0)
  set_target_properties(${ARG_NAME} PROPERTIES
    PREFIX "lib"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY "${OAR_PLUGIN_OUTPUT_DIR}")
  target_link_options(${ARG_NAME} PRIVATE
    "-Wl,--version-script=${OAR_PLUGIN_VERSION_SCRIPT}" "-Wl,--no-undefined")
endfunction()
