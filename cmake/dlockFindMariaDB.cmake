# MariaDB Connector/C (Debian's libmariadb-dev: <mysql.h> in include/mariadb, libmariadb), as the
# imported target MariaDB::libmariadb, for dlock::mariadb: included by the build (CMakeLists.txt)
# and, installed beside it, by dlockConfig.cmake for `find_package(dlock COMPONENTS mariadb)`.
# Sets DLOCK_MARIADB_FOUND. Quiet: the callers name the package when it is missing.
find_path(DLOCK_MARIADB_INCLUDE_DIR mariadb_version.h PATH_SUFFIXES mariadb)
find_library(DLOCK_MARIADB_LIBRARY mariadb)
if(DLOCK_MARIADB_INCLUDE_DIR AND DLOCK_MARIADB_LIBRARY)
  set(DLOCK_MARIADB_FOUND TRUE)
  # A user's project may define it first (its own lookup, or a second find_package(dlock)).
  if(NOT TARGET MariaDB::libmariadb)
    add_library(MariaDB::libmariadb UNKNOWN IMPORTED)
    set_target_properties(MariaDB::libmariadb PROPERTIES IMPORTED_LOCATION "${DLOCK_MARIADB_LIBRARY}"
                                                         INTERFACE_INCLUDE_DIRECTORIES "${DLOCK_MARIADB_INCLUDE_DIR}")
  endif()
else()
  set(DLOCK_MARIADB_FOUND FALSE)
endif()
