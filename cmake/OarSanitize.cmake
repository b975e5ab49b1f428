# OAR_SANITIZE: compiles and links every target with the chosen sanitizers.
# UBSan findings abort (a test fails) rather than print and go on.
if(NOT OAR_SANITIZE)
  return()
endif()
set(_oar_known "address" "undefined" "thread")
string(REPLACE "," ";" _oar_sanitizers "${OAR_SANITIZE}")
foreach(s ${_oar_sanitizers})
  if(NOT s IN_LIST _oar_known)
    message(FATAL_ERROR "OAR_SANITIZE: unknown sanitizer '${s}' in '${OAR_SANITIZE}'; "
                        "expected a comma-separated list of address, undefined, thread")
  endif()
endforeach()
if("thread" IN_LIST _oar_sanitizers AND "address" IN_LIST _oar_sanitizers)
  message(FATAL_ERROR "OAR_SANITIZE: thread and address cannot be combined (got '${OAR_SANITIZE}'); "
                      "build them in separate build directories")
endif()
add_compile_options(-fsanitize=${OAR_SANITIZE} -fno-omit-frame-pointer -g)
add_link_options(-fsanitize=${OAR_SANITIZE})
if("undefined" IN_LIST _oar_sanitizers)
  add_compile_options(-fno-sanitize-recover=undefined)
endif()
message(STATUS "oar: building with -fsanitize=${OAR_SANITIZE}")
