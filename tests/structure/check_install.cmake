# Installs the build into a scratch prefix and checks the binary, the schema,
# the reference data and the guides land where GNUInstallDirs puts them.
# -DBUILD_DIR=<build tree> -DPREFIX=<scratch prefix> -DBINDIR=bin -DDATADIR=share
# -DDOCDIR=share/doc/fabricbench -DGUIDES_DIR=<source docs/guides>
file(REMOVE_RECURSE ${PREFIX})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed")
endif()
foreach(file ${BINDIR}/fabricbench ${DATADIR}/fabricbench/result.schema.json ${DATADIR}/fabricbench/expectations.json)
  if(NOT EXISTS ${PREFIX}/${file})
    message(FATAL_ERROR "not installed: ${file}")
  endif()
endforeach()
file(GLOB guides RELATIVE ${GUIDES_DIR} ${GUIDES_DIR}/*.md)
foreach(guide ${guides})
  if(NOT EXISTS ${PREFIX}/${DOCDIR}/guides/${guide})
    message(FATAL_ERROR "not installed: ${DOCDIR}/guides/${guide}")
  endif()
endforeach()
list(LENGTH guides count)
message(STATUS "installed: ${BINDIR}/fabricbench, ${DATADIR}/fabricbench/{result.schema.json,expectations.json}, "
               "${count} guides in ${DOCDIR}/guides")
