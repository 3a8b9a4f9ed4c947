# kiln_add_model(<target> MODEL <file.onnx> [TARGET cpu|cuda] [NAME <identifier>]
#                [ARGS <extra kiln compile flags>...])
#
# Compiles an ONNX model at build time, like tfcompile's build rule: <target>
# becomes a static library holding the model's code and weights
# (`kiln compile --emit=obj`), whose include directory has the generated
# header <NAME>.h (class kiln_models::<NAME>), and which links the Kiln
# runtime. NAME defaults to <target>. The model is recompiled when the
# .onnx file or the compiler changes.
function(kiln_add_model target)
  cmake_parse_arguments(ARG "" "MODEL;TARGET;NAME" "ARGS" ${ARGN})
  if(NOT ARG_MODEL)
    message(FATAL_ERROR "kiln_add_model(${target}): MODEL <file.onnx> is required")
  endif()
  if(NOT TARGET Kiln::kiln)
    message(FATAL_ERROR "kiln_add_model(${target}): this Kiln installation has no compiler")
  endif()
  if(NOT ARG_TARGET)
    set(ARG_TARGET cpu)
  endif()
  if(NOT ARG_NAME)
    string(MAKE_C_IDENTIFIER "${target}" ARG_NAME)
  endif()
  get_filename_component(model "${ARG_MODEL}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/kiln_models/${target}")
  file(MAKE_DIRECTORY "${dir}")
  add_custom_command(
    OUTPUT "${dir}/${ARG_NAME}.o" "${dir}/${ARG_NAME}.h"
    COMMAND Kiln::kiln compile "${model}" --target=${ARG_TARGET} --emit=obj --name ${ARG_NAME}
            -o "${dir}/${ARG_NAME}.o" ${ARG_ARGS}
    COMMAND Kiln::kiln compile "${model}" --target=${ARG_TARGET} --emit=header --name ${ARG_NAME}
            -o "${dir}/${ARG_NAME}.h" ${ARG_ARGS}
    DEPENDS "${model}" Kiln::kiln
    COMMENT "Compiling ${ARG_MODEL} with Kiln (${ARG_NAME})"
    VERBATIM)
  add_library(${target} STATIC "${dir}/${ARG_NAME}.o" "${dir}/${ARG_NAME}.h")
  set_target_properties(${target} PROPERTIES LINKER_LANGUAGE CXX)
  target_include_directories(${target} PUBLIC "${dir}")
  target_link_libraries(${target} PUBLIC Kiln::runtime)
  target_compile_features(${target} PUBLIC cxx_std_17)
endfunction()
