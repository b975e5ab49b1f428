/* A small library a test plugin links against; the build puts it where the
 * plugin's loader never looks, so at run time it is "missing". */
int oar_test_dep_answer(void);
int oar_test_dep_answer(void) { return 42; }
