// Cocoa (AppKit): the application object, for a delegate method's types.
#pragma once
#import <Foundation/Foundation.h>
@interface NSApplication : NSObject
@property (class, readonly, strong) NSApplication *sharedApplication;
@end
