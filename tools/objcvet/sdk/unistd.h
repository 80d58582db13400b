#pragma once
int close(int fildes);
