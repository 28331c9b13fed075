#include "Driver/Driver.h"
namespace uopc {
int uopcMain(int, char **) { return 2; }
}
